package stdiorpc

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/internal/jsonscan"
)

// kind is what a line from the server is.
type kind uint8

const (
	kindDrop         kind = iota // not a message this transport takes
	kindNotification             // a method without an id
	kindRequest                  // a method with an id
	kindResponse                 // no method
)

// envelope is the members of one message that say where it goes, as
// sent: raw values, sub-slices of the line.
type envelope struct {
	id     []byte // nil when absent or null
	method bool   // a method other than ""
	result []byte // nil when absent
	errv   []byte // nil when absent or null
	// errTwice: the error member is named more than once. encoding/json
	// decodes each into the same value, so the last one's missing members
	// are the earlier ones'; the caller decodes such a line whole.
	errTwice bool
}

// classify reads the line's envelope in one pass, without decoding the
// values it only passes on (a result is kept as sent). It takes and
// refuses lines as mcp-go's stdio transport does after its two decodes of
// each line, which encoding/json makes subtle, and FuzzClassify holds it
// to that:
//
//   - members are matched by name without regard to case (as
//     bytes.EqualFold, Unicode folding included), after unescaping;
//   - a member named twice counts as its last, but either one of the
//     wrong type refuses the line, and null leaves a string as it was;
//   - jsonrpc and method must be strings (or null), an id a string or
//     a number a float64 holds (or null);
//   - a response (no method) is refused for an error member that does not
//     decode as mcp.JSONRPCErrorDetails, which the caller decodes.
func classify(line []byte) (envelope, kind) {
	var e envelope
	if !json.Valid(line) {
		return e, kindDrop
	}
	if line[jsonscan.SkipSpace(line, 0)] != '{' {
		// null decodes into a struct as nothing: a response without an
		// id, which no request waits for. Anything else is refused.
		return e, kindDrop
	}
	var errv []byte // the last error member, null included
	for key, val := range jsonscan.Members(line) {
		switch memberName(key) {
		case "jsonrpc":
			if val[0] != '"' && val[0] != 'n' {
				return e, kindDrop
			}
		case "id":
			if val[0] == 'n' {
				e.id = nil
			} else if !validID(val) {
				return e, kindDrop
			} else {
				e.id = val
			}
		case "method":
			switch val[0] {
			case '"':
				e.method = len(val) > 2
			case 'n':
			default:
				return e, kindDrop
			}
		case "result":
			e.result = val
		case "error":
			e.errTwice = errv != nil
			errv = val
		}
	}
	if errv != nil && errv[0] != 'n' {
		e.errv = errv
	}
	switch {
	case e.method && e.id == nil:
		return e, kindNotification
	case e.method:
		return e, kindRequest
	}
	return e, kindResponse
}

// validID reports whether an id that is not null decodes as mcp.RequestId.
func validID(val []byte) bool {
	if _, ok := jsonscan.Plain(val); ok {
		return true
	}
	var id mcp.RequestId
	return id.UnmarshalJSON(val) == nil
}

// The members classify looks at; memberName returns the one key names.
var members = [...]string{"jsonrpc", "id", "method", "result", "error"}

var memberBytes = func() (b [len(members)][]byte) {
	for i, m := range members {
		b[i] = []byte(m)
	}
	return b
}()

// memberName returns which of the members key (a raw JSON string's
// contents) names, or "".
func memberName(key []byte) string {
	if bytes.IndexByte(key, '\\') >= 0 || !utf8.Valid(key) {
		key = []byte(jsonscan.Unquote(key))
	}
	for i, m := range memberBytes {
		// A folded match is never longer than three times the name
		// (every byte of it a three-byte rune), nor shorter than it.
		if len(key) >= len(m) && len(key) <= 3*len(m) && bytes.EqualFold(key, m) {
			return members[i]
		}
	}
	return ""
}

// requestID returns the id a response's raw id val stands for.
func requestID(val []byte) mcp.RequestId {
	if s, ok := jsonscan.Plain(val); ok {
		return mcp.NewRequestId(string(s))
	}
	var id mcp.RequestId
	_ = id.UnmarshalJSON(val) // classify vetted it (null is nil)
	return id
}

// responseKey is the key of the pending request that a response with the
// raw id val answers: mcp.RequestId's String, as SendRequest keys it. It
// is built in buf, and a plain string id needs no decode.
func responseKey(buf []byte, val []byte) []byte {
	if val == nil {
		return append(buf, "<nil>"...)
	}
	if s, ok := jsonscan.Plain(val); ok {
		return append(append(buf, "string:"...), s...)
	}
	var id mcp.RequestId
	_ = id.UnmarshalJSON(val) // classify vetted it
	return append(buf, id.String()...)
}
