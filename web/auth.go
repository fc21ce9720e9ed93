package web

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/gin-gonic/gin"
)

// AdminUser is the user id that makes a key an admin key: it may act for
// every user and read /metrics.
const AdminUser = "*"

// wsProtocolPrefix prefixes the API key in a WebSocket subprotocol, for
// browsers, which cannot set headers on a WebSocket.
const wsProtocolPrefix = "bearer."

// keyEntry is one configured key, kept only as its SHA-256 so every
// comparison takes the same time whatever the key's length.
type keyEntry struct {
	sum    [32]byte
	userID string
}

// keyring holds the configured keys. It is immutable after New.
type keyring []keyEntry

func newKeyring(keys map[string]string) keyring {
	kr := make(keyring, 0, len(keys))
	for k, u := range keys {
		kr = append(kr, keyEntry{sha256.Sum256([]byte(k)), u})
	}
	return kr
}

// lookup returns the user id of key. It compares against every entry in
// constant time, so timing tells nothing about which key nearly matched.
func (kr keyring) lookup(key string) (string, bool) {
	if key == "" {
		return "", false
	}
	sum := sha256.Sum256([]byte(key))
	user, found := "", false
	for _, e := range kr {
		if subtle.ConstantTimeCompare(sum[:], e.sum[:]) == 1 {
			user, found = e.userID, true
		}
	}
	return user, found
}

// bearer returns the key of an "Authorization: Bearer <key>" header.
func bearer(r *http.Request) string {
	scheme, key, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(key)
}

// wsProtocolKey returns the key offered as a "bearer.<key>" WebSocket
// subprotocol, and the subprotocol itself to echo back.
func wsProtocolKey(r *http.Request) (key, protocol string) {
	for _, h := range r.Header.Values("Sec-WebSocket-Protocol") {
		for p := range strings.SplitSeq(h, ",") {
			p = strings.TrimSpace(p)
			if len(p) > len(wsProtocolPrefix) && strings.EqualFold(p[:len(wsProtocolPrefix)], wsProtocolPrefix) {
				return p[len(wsProtocolPrefix):], p
			}
		}
	}
	return "", ""
}

// authEnabled reports whether keys are configured; without keys every route
// is open (and cmd binds loopback only, see CheckBind).
func (s *Server) authEnabled() bool { return len(s.keys) > 0 }

// authenticate finds the caller's user id from the Authorization header or,
// for a WebSocket, the bearer subprotocol. It reports false when keys are
// configured and none matches; with no keys every caller is an admin.
func (s *Server) authenticate(c *gin.Context) (string, bool) {
	if !s.authEnabled() {
		return AdminUser, true
	}
	key := bearer(c.Request)
	if key == "" {
		key, _ = wsProtocolKey(c.Request)
	}
	return s.keys.lookup(key)
}

// requireKey is middleware for routes any valid key may use.
func (s *Server) requireKey(c *gin.Context) {
	user, ok := s.authenticate(c)
	if !ok {
		s.fail(c, ErrUnauthorized, nil)
		return
	}
	setPrincipal(c, user)
	c.Next()
}

// setPrincipal records the authenticated user id for the handlers (gin's
// keys) and for the dependencies they call (the request's context, see
// Principal).
func setPrincipal(c *gin.Context, user string) {
	if info := infoOf(c.Request.Context()); info != nil {
		info.principal = user
		return
	}
	// A request that did not pass requestIDMiddleware (a Kit route's
	// own engine in tests): its info starts here.
	c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), requestInfoKey, &requestInfo{principal: user}))
}

// Principal returns the user id of the API key that authenticated the
// request whose context is ctx (AdminUser for an admin key, and for every
// request when no keys are configured), or "" before authentication and
// outside a request. Adapters use it to say whom a tool call was for in
// their logs, as they use RequestID.
func Principal(ctx context.Context) string {
	if info := infoOf(ctx); info != nil {
		return info.principal
	}
	return ""
}

// requireUser is middleware for routes under a :user_id: the key must be
// that user's or an admin's, and the path's ids must be valid (checkID).
func (s *Server) requireUser(c *gin.Context) {
	if s.authorizeUser(c, c.Param("user_id")) && s.validPathIDs(c) {
		c.Next()
	}
}

// authorizeUser authenticates the request and checks that it may act for
// userID; on failure it has already answered (401 or 403).
func (s *Server) authorizeUser(c *gin.Context, userID string) bool {
	user, ok := s.authenticate(c)
	if !ok {
		s.fail(c, ErrUnauthorized, nil)
		return false
	}
	if !mayActFor(user, userID) {
		s.fail(c, forbidden(userID), nil)
		return false
	}
	setPrincipal(c, user)
	return true
}

// requireAdmin is middleware for routes only an admin key may use.
func (s *Server) requireAdmin(c *gin.Context) {
	user, ok := s.authenticate(c)
	if !ok {
		s.fail(c, ErrUnauthorized, nil)
		return
	}
	if user != AdminUser {
		s.fail(c, &requestError{http.StatusForbidden, "this route needs an admin API key"}, nil)
		return
	}
	setPrincipal(c, user)
	c.Next()
}

func mayActFor(principal, userID string) bool {
	return principal == AdminUser || principal == userID
}

func forbidden(userID string) error {
	return &requestError{http.StatusForbidden, fmt.Sprintf("API key may not act for user %q", userID)}
}

// ParseKeys parses API keys in the ELYSIA_API_KEYS form: comma-separated
// key:user_id pairs ("k1:alice,k2:bob,k3:*"), where user id "*" makes an
// admin key. Spaces around entries are ignored, and so are empty entries. The
// result maps key to user id. Errors name the entry by position and never
// repeat a key.
func ParseKeys(s string) (map[string]string, error) {
	keys := make(map[string]string)
	for i, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		if err := addKey(keys, entry); err != nil {
			return nil, fmt.Errorf("API keys entry %d: %w", i+1, err)
		}
	}
	return keys, nil
}

// LoadKeysFile reads API keys from a file (ELYSIA_API_KEYS_FILE): one
// key:user_id pair a line; blank lines and lines starting with # are
// skipped. Errors name the file and line and never repeat a key.
func LoadKeysFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read API keys file: %w", err)
	}
	defer func() { _ = f.Close() }() // read-only: a close error loses nothing
	keys := make(map[string]string)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := addKey(keys, line); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read API keys file %s: %w", path, err)
	}
	return keys, nil
}

// addKey parses one key:user_id pair into keys. The user id follows the
// last colon, so keys may contain colons.
func addKey(keys map[string]string, pair string) error {
	i := strings.LastIndexByte(pair, ':')
	if i < 0 {
		return errors.New("want key:user_id, found no ':'")
	}
	key, user := strings.TrimSpace(pair[:i]), strings.TrimSpace(pair[i+1:])
	switch {
	case key == "":
		return errors.New("empty key before ':'")
	case user == "":
		return errors.New("empty user id after ':' (use * for an admin key)")
	case strings.ContainsAny(key, " \t"):
		return errors.New("key contains white space")
	}
	if _, dup := keys[key]; dup {
		return errors.New("key given twice")
	}
	keys[key] = user
	return nil
}

// CheckBind refuses to serve without authentication on an address other
// machines can reach: with no API keys, addr must be a loopback address
// (127.0.0.0/8, ::1 or localhost) unless allowUnauthenticated is set. It does
// no I/O: host names other than localhost count as not loopback.
func CheckBind(addr string, haveKeys, allowUnauthenticated bool) error {
	if haveKeys || allowUnauthenticated {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("refusing to serve %s without API keys: anyone who can reach it could use every MCP server; "+
		"set ELYSIA_API_KEYS (k1:alice,k2:*) or ELYSIA_API_KEYS_FILE, listen on a loopback address such as 127.0.0.1, "+
		"or pass --allow-unauthenticated", addr)
}
