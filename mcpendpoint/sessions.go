package mcpendpoint

import (
	"container/list"
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

// Sessions per user: a user may hold an eighth of MaxSessions open at once,
// and at least minSessionsPerUser (all MaxSessions when that is fewer).
const (
	minSessionsPerUser   = 64
	sessionsPerUserShare = 8
)

// sessionsPerUser is how many sessions one user may hold open when the
// endpoint holds at most total: 1,250 of the default 10,000.
func sessionsPerUser(total int) int {
	return max(min(total, minSessionsPerUser), total/sessionsPerUserShare)
}

// sessionBook records which user opened each session, so that a session id
// is good only with its owner's key: another user's request naming it is
// answered as for an unknown session (404). It is mcp-go's session id
// manager, resolved per request to know the asking user.
//
// It bounds the sessions, in O(1) per new one. A user at perUser sessions
// who opens another loses their own least recently used, never another
// user's. Past max sessions in all (which the per-user cap alone cannot
// prevent once enough users are near it) the least recently used session
// of any user goes: the session idle longest is the one least likely to
// be missed, and picking it costs nothing. A session the book forgets so
// is handed to evicted, which ends it everywhere (evict.go).
type sessionBook struct {
	max, perUser int
	// evicted is called, outside mu, with each session forgotten to make
	// room for another; it must not block.
	evicted func(eviction)

	// mu guards owners, hashes, users, lru and adopting.
	mu     sync.Mutex
	owners map[string]*owned
	// hashes holds each session's id by its idHash.
	hashes map[string]string
	// users holds each user's sessions, most recently used first; a user
	// with none has no entry.
	users map[string]*list.List
	// lru holds every session, most recently used first.
	lru list.List
	// adopting holds the sessions another replica opened that a request
	// is adopting now (shared.go), and those evicted whose ending is under
	// way, so that no request adopts them again meanwhile; each channel
	// closes when it is done.
	adopting map[string]chan struct{}
}

type owned struct {
	id   string
	user string
	// hash is the SHA-256 of the session id (idHash), the name the
	// replicas tell each other.
	hash string
	// all and mine are the session's places in the book's lru and in its
	// user's list.
	all, mine *list.Element
	// shared is when the session's use was last recorded in the
	// SessionStore.
	shared time.Time
	// streams counts the session's GET streams open now.
	streams int
	// version is the protocol version the session negotiated.
	version string
}

// eviction is a session the book forgot to make room for another.
type eviction struct {
	id, user string
	// cause says which cap it made room under: causeUser or causeService.
	cause string
	// done is called once the session has ended everywhere; until then a
	// request naming it waits rather than adopting it again.
	done func()
}

// Causes of an eviction.
const (
	causeUser    = "sessions_per_user"
	causeService = "max_sessions"
)

// newSessionBook returns a book of at most limit sessions, perUser of
// them one user's, that hands the sessions it forgets to evicted (which
// must not block).
func newSessionBook(limit, perUser int, evicted func(eviction)) *sessionBook {
	return &sessionBook{max: max(limit, 1), perUser: max(perUser, 1), evicted: evicted,
		owners: map[string]*owned{}, hashes: map[string]string{}, users: map[string]*list.List{}}
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

// newID returns a fresh random session id, owned by user (add).
func (b *sessionBook) newID(user, prefix string) string {
	var raw [16]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails
	id := prefix + hex.EncodeToString(raw[:])
	b.add(id, user)
	return id
}

// add records session id, owned by user, unless it is recorded already.
// A user at perUser sessions loses their least recently used one; past
// max sessions in all, the least recently used one of any user goes. Each
// goes to evicted, after mu is released: add does no I/O and waits for no
// session to end.
func (b *sessionBook) add(id, user string) {
	h := idHash(id)
	gone := make([]eviction, 0, 2) // at most one per cap
	b.mu.Lock()
	if _, ok := b.owners[id]; ok {
		b.mu.Unlock()
		return
	}
	if mine := b.users[user]; mine != nil {
		for mine.Len() >= b.perUser {
			gone = append(gone, b.evictLocked(mine.Back().Value.(*owned), causeUser))
		}
	}
	for b.lru.Len() >= b.max {
		gone = append(gone, b.evictLocked(b.lru.Back().Value.(*owned), causeService))
	}
	mine := b.users[user]
	if mine == nil {
		mine = list.New()
		b.users[user] = mine
	}
	o := &owned{id: id, user: user, hash: h}
	o.all, o.mine = b.lru.PushFront(o), mine.PushFront(o)
	b.owners[id], b.hashes[h] = o, id
	b.mu.Unlock()
	for _, ev := range gone {
		if b.evicted == nil {
			ev.done()
			continue
		}
		b.evicted(ev)
	}
}

// evictLocked forgets o and marks it being ended until the eviction's
// done is called. b.mu must be held.
func (b *sessionBook) evictLocked(o *owned, cause string) eviction {
	b.removeLocked(o)
	ev := eviction{id: o.id, user: o.user, cause: cause, done: func() {}}
	if _, busy := b.adopting[o.id]; busy { // an adoption under way: it finds the session gone
		return ev
	}
	if b.adopting == nil {
		b.adopting = map[string]chan struct{}{}
	}
	c := make(chan struct{})
	b.adopting[o.id] = c
	ev.done = func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.adopting, o.id)
		close(c)
	}
	return ev
}

// removeLocked forgets o. b.mu must be held.
func (b *sessionBook) removeLocked(o *owned) {
	delete(b.owners, o.id)
	delete(b.hashes, o.hash)
	b.lru.Remove(o.all)
	mine := b.users[o.user]
	mine.Remove(o.mine)
	if mine.Len() == 0 {
		delete(b.users, o.user)
	}
}

// usedLocked marks o used now. b.mu must be held.
func (b *sessionBook) usedLocked(o *owned) {
	b.lru.MoveToFront(o.all)
	b.users[o.user].MoveToFront(o.mine)
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
	return b.hashes[h]
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
	b.usedLocked(o)
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
	b.usedLocked(o)
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

// forget forgets session id, if it is open here.
func (b *sessionBook) forget(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if o, ok := b.owners[id]; ok {
		b.removeLocked(o)
	}
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
