package web

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
)

// maxIDBytes bounds user, conversation and query ids. Elysia's are UUIDs
// (36 bytes); the bound keeps a stray path or message from becoming a
// store key of any size.
const maxIDBytes = 256

// checkID returns a 400 saying what is wrong with id, the value of field,
// or nil. An id is 1 to maxIDBytes bytes of UTF-8 without control
// characters or "/". Anything else could not come back as it was given
// (JSON turns invalid UTF-8 into U+FFFD, so events would name another
// conversation), would put control characters in logs, would make
// PostgreSQL, which refuses NUL and invalid UTF-8 in text, fail the
// request with a 500, or (with a "/") would name a conversation that a
// WebSocket message can create but no path can reach. Other characters
// are the client's choice.
func checkID(field, id string) error {
	switch {
	case id == "":
		return badRequest(field + " must not be empty")
	case len(id) > maxIDBytes:
		return badRequest(fmt.Sprintf("%s is too long (%d bytes, limit %d)", field, len(id), maxIDBytes))
	case !utf8.ValidString(id):
		return badRequest(field + " is not valid UTF-8")
	case strings.ContainsFunc(id, unicode.IsControl):
		return badRequest(field + " contains a control character")
	case strings.ContainsRune(id, '/'):
		return badRequest(field + ` contains "/", which no path segment can hold`)
	}
	return nil
}

// checkIDs checks ids given as field, value pairs with checkID and returns
// the first error. Empty values are skipped: in a body they mean a
// default, or were refused as missing already.
func checkIDs(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			continue
		}
		if err := checkID(pairs[i], pairs[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// validPathIDs checks the user, conversation and config ids in the
// request's path, where an empty one ("/tree//c1") is refused too. On
// failure it has answered 400.
func (s *Server) validPathIDs(c *gin.Context) bool {
	for _, p := range c.Params {
		if p.Key != "user_id" && p.Key != "conversation_id" && p.Key != "config_id" {
			continue
		}
		if err := checkID(p.Key, p.Value); err != nil {
			s.fail(c, err, nil)
			return false
		}
	}
	return true
}
