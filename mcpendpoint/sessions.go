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

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway"
)

// sessionBook records which user opened each session, so that a session id
// is good only with its owner's key: another user's request naming it is
// answered as for an unknown session (404). It is mcp-go's session id
// manager, resolved per request to know the asking user.
type sessionBook struct {
	max int
	// mu guards owners and adopting.
	mu     sync.Mutex
	owners map[string]*owned
	// adopting holds the sessions another replica opened that a request
	// is adopting now (shared.go); each channel closes when it is done.
	adopting map[string]chan struct{}
}

type owned struct {
	user string
	// hash is the SHA-256 of the session id (idHash), the name the
	// replicas tell each other.
	hash string
	seen time.Time
	// shared is when the session's use was last recorded in the
	// SessionStore.
	shared time.Time
	// streams counts the session's GET streams open now.
	streams int
	// version is the protocol version the session negotiated.
	version string
}

func newSessionBook(max int) *sessionBook {
	return &sessionBook{max: max, owners: map[string]*owned{}}
}

var _ mcpserver.SessionIdManagerResolver = (*sessionBook)(nil)

// ResolveSessionIdManager returns the manager for r's user.
func (b *sessionBook) ResolveSessionIdManager(r *http.Request) mcpserver.SessionIdManager {
	if r == nil || r.Context().Value(endKey{}) != nil { // the sweeper, or another replica's DELETE: it may end any session
		return userSessions{b: b, sweeper: true}
	}
	adopt, _ := r.Context().Value(adoptKey{}).(string)
	return userSessions{b: b, user: mcpgateway.UserFrom(r.Context()), adopt: adopt}
}

// newID returns a fresh random session id, owned by user; past max open
// sessions the least recently used one is forgotten.
func (b *sessionBook) newID(user, prefix string) string {
	var raw [16]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails
	id := prefix + hex.EncodeToString(raw[:])
	b.add(id, user)
	return id
}

// add records session id, owned by user, unless it is recorded already;
// past max open sessions the least recently used one is forgotten.
func (b *sessionBook) add(id, user string) {
	h := idHash(id)
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.owners[id]; ok {
		return
	}
	if len(b.owners) >= b.max {
		oldest, at := "", time.Time{}
		for k, o := range b.owners {
			if oldest == "" || o.seen.Before(at) {
				oldest, at = k, o.seen
			}
		}
		delete(b.owners, oldest)
	}
	b.owners[id] = &owned{user: user, hash: h, seen: time.Now()}
}

// touchDue reports whether session id's use was last recorded in the
// SessionStore longer than every ago, and if so counts it recorded now.
func (b *sessionBook) touchDue(id string, every time.Duration) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.owners[id]
	if !ok || time.Since(o.shared) < every {
		return false
	}
	o.shared = time.Now()
	return true
}

// touched counts session id's use recorded in the SessionStore now.
func (b *sessionBook) touched(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if o, ok := b.owners[id]; ok {
		o.shared = time.Now()
	}
}

// startAdopt marks session id being adopted and returns the func that
// unmarks it; if it is already, it returns false and the channel that
// closes when that adoption is done.
func (b *sessionBook) startAdopt(id string) (done func(), ok bool, wait <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, busy := b.adopting[id]; busy {
		return nil, false, c
	}
	if b.adopting == nil {
		b.adopting = map[string]chan struct{}{}
	}
	c := make(chan struct{})
	b.adopting[id] = c
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.adopting, id)
		close(c)
	}, true, nil
}

// adoption returns the channel that closes when the adoption of session
// id in progress is done, or nil when none is.
func (b *sessionBook) adoption(id string) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.adopting[id]
}

// owner returns the user of session id, if it is open here.
func (b *sessionBook) owner(id string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.owners[id]
	if !ok {
		return "", false
	}
	return o.user, true
}

// byHash returns the id of the session whose idHash is h, or "".
func (b *sessionBook) byHash(h string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, o := range b.owners {
		if o.hash == h {
			return id
		}
	}
	return ""
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
	// adopt is the id of the session another replica opened that this
	// request's initialize adopts, or "".
	adopt string
}

func (u userSessions) Generate() string {
	if u.adopt != "" {
		u.b.add(u.adopt, u.user)
		return u.adopt
	}
	return u.b.newID(u.user, httpPrefix)
}

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

// negotiated records the protocol version a session's initialize agreed
// on (an AfterInitialize hook).
func (b *sessionBook) negotiated(ctx context.Context, _ any, _ *mcp.InitializeRequest, res *mcp.InitializeResult) {
	sid := SessionID(ctx)
	if res == nil || sid == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if o, ok := b.owners[sid]; ok {
		o.version = res.ProtocolVersion
	}
}

// resumable reports whether session id is user's and negotiated a
// protocol with resumable streams (2025-11-25 or later).
func (b *sessionBook) resumable(id, user string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.owners[id]
	return ok && o.user == user && o.version >= mcp.ProtocolVersion20251125
}
