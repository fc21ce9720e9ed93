package mcpendpoint

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway"
)

// sessionBook records which user opened each session, so that a session id
// is good only with its owner's key: another user's request naming it is
// answered as for an unknown session (404). It is mcp-go's session id
// manager, resolved per request to know the asking user.
type sessionBook struct {
	max int
	// mu guards owners.
	mu     sync.Mutex
	owners map[string]*owned
}

type owned struct {
	user string
	seen time.Time
	// streams counts the session's GET streams open now.
	streams int
}

func newSessionBook(max int) *sessionBook {
	return &sessionBook{max: max, owners: map[string]*owned{}}
}

var _ mcpserver.SessionIdManagerResolver = (*sessionBook)(nil)

// ResolveSessionIdManager returns the manager for r's user.
func (b *sessionBook) ResolveSessionIdManager(r *http.Request) mcpserver.SessionIdManager {
	if r == nil { // the transport's own sweeper: it may end any session
		return userSessions{b: b, sweeper: true}
	}
	return userSessions{b: b, user: mcpgateway.UserFrom(r.Context())}
}

// newID returns a fresh random session id, owned by user; past max open
// sessions the least recently used one is forgotten.
func (b *sessionBook) newID(user, prefix string) string {
	var raw [16]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails
	id := prefix + hex.EncodeToString(raw[:])
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.owners) >= b.max {
		oldest, at := "", time.Time{}
		for k, o := range b.owners {
			if oldest == "" || o.seen.Before(at) {
				oldest, at = k, o.seen
			}
		}
		delete(b.owners, oldest)
	}
	b.owners[id] = &owned{user: user, seen: time.Now()}
	return id
}

// ownedBy reports whether session id is open and belongs to user, marking
// it used.
func (b *sessionBook) ownedBy(id, user string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.owners[id]
	if !ok || o.user != user {
		return false
	}
	o.seen = time.Now()
	return true
}

// streaming reports whether session id is open, belongs to user and has
// its GET stream open, marking it used.
func (b *sessionBook) streaming(id, user string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.owners[id]
	if !ok || o.user != user || o.streams == 0 {
		return false
	}
	o.seen = time.Now()
	return true
}

// openStream counts a GET stream of session id until the returned func is
// called.
func (b *sessionBook) openStream(id string) (closed func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.owners[id]
	if !ok {
		return func() {}
	}
	o.streams++
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		o.streams--
	}
}

func (b *sessionBook) forget(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.owners, id)
}

// Session id prefixes: an SSE session ends with its stream, an HTTP one
// only with DELETE or when idle.
const (
	httpPrefix = "mcp-session-"
	ssePrefix  = "mcp-sse-"
)

// unregistered forgets an SSE session once its stream has closed (mcp-go
// unregisters it); an HTTP session outlives its GET stream.
func (b *sessionBook) unregistered(_ context.Context, s mcpserver.ClientSession) {
	if id := s.SessionID(); strings.HasPrefix(id, ssePrefix) {
		b.forget(id)
	}
}

// generateSSE is the SSE transport's session id generator.
func (b *sessionBook) generateSSE(ctx context.Context, r *http.Request) (string, error) {
	return b.newID(mcpgateway.UserFrom(r.Context()), ssePrefix), nil
}

// userSessions is the session id manager of one request, for its user.
type userSessions struct {
	b       *sessionBook
	user    string
	sweeper bool
}

func (u userSessions) Generate() string { return u.b.newID(u.user, httpPrefix) }

func (u userSessions) Validate(id string) (bool, error) {
	if !u.b.ownedBy(id, u.user) {
		return false, fmt.Errorf("%w", ErrUnknownSession)
	}
	return false, nil
}

func (u userSessions) Terminate(id string) (bool, error) {
	if !u.sweeper && !u.b.ownedBy(id, u.user) {
		return false, fmt.Errorf("%w", ErrUnknownSession)
	}
	u.b.forget(id)
	return false, nil
}
