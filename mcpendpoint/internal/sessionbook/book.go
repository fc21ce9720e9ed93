// Package sessionbook keeps the table of the endpoint's 2025-11-25 MCP
// sessions: which user opened each, so that a session id is good only
// with its owner's key, within a cap per user and a cap in all. It is
// mcp-go's session id manager, and it also records, per session, its
// open GET streams, the protocol version it negotiated, when its use was
// last recorded in the SessionStore, and the adoptions under way of
// sessions other replicas opened.
package sessionbook

import (
	"container/list"
	"context"
	"crypto/rand"
	"crypto/sha256"
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

// PerUser is how many sessions one user may hold open when the endpoint
// holds at most total: 1,250 of the default 10,000.
func PerUser(total int) int {
	return max(min(total, minSessionsPerUser), total/sessionsPerUserShare)
}

// Session id prefixes: an SSE session ends with its stream, an HTTP one
// only with DELETE or when idle.
const (
	HTTPPrefix = "mcp-session-"
	SSEPrefix  = "mcp-sse-"
)

// Hash is the SHA-256 of a session id, in hex: the name the replicas
// tell each other (ByHash).
func Hash(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// Book records which user opened each session, so that a session id is
// good only with its owner's key: another user's request naming it is
// answered as for an unknown session (404). It is mcp-go's session id
// manager, resolved per request to know the asking user.
//
// It bounds the sessions, in O(1) per new one. A user at perUser sessions
// who opens another loses their own least recently used, never another
// user's. Past max sessions in all (which the per-user cap alone cannot
// prevent once enough users are near it) the least recently used session
// of any user goes: the session idle longest is the one least likely to
// be missed, and picking it costs nothing. A session the book forgets so
// is handed to evicted, which ends it everywhere.
//
// A Book is safe for concurrent use.
type Book struct {
	max, perUser int
	// unknown is the error the session id managers' Validate and
	// Terminate wrap for a session not open or another user's.
	unknown error
	// evicted is called, outside mu, with each session forgotten to make
	// room for another; it must not block.
	evicted func(Eviction)

	// mu guards owners, hashes, users, lru, adopting and opened.
	mu     sync.Mutex
	owners map[string]*owned
	// hashes holds each session's id by its Hash.
	hashes map[string]string
	// users holds each user's sessions, most recently used first; a user
	// with none has no entry.
	users map[string]*list.List
	// lru holds every session, most recently used first.
	lru list.List
	// adopting holds the sessions another replica opened that a request
	// is adopting now (StartAdopt), and those evicted whose ending is
	// under way, so that no request adopts them again meanwhile; each
	// channel closes when it is done.
	adopting map[string]chan struct{}
	// opened is closed, and set to nil, when a GET stream opens
	// (OpenStream): the wake of the waits for a stream (WaitStreamingHash,
	// StreamOpened). Nil while nobody waits.
	opened chan struct{}
}

type owned struct {
	id   string
	user string
	// hash is the Hash of the session id, the name the replicas tell
	// each other.
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

// Eviction is a session the book forgot to make room for another.
type Eviction struct {
	ID, User string
	// Cause says which cap it made room under: CauseUser or CauseService.
	Cause string
	// Done is called once the session has ended everywhere; until then a
	// request naming it waits (Adoption) rather than adopting it again.
	Done func()
}

// Causes of an eviction.
const (
	CauseUser    = "sessions_per_user"
	CauseService = "max_sessions"
)

// New returns a book of at most limit sessions, perUser of them one
// user's, that hands the sessions it forgets to evicted (which must not
// block; nil ends them at once). Its session id managers answer a
// session not open or another user's with an error that wraps unknown.
func New(limit, perUser int, unknown error, evicted func(Eviction)) *Book {
	return &Book{max: max(limit, 1), perUser: max(perUser, 1), unknown: unknown, evicted: evicted,
		owners: map[string]*owned{}, hashes: map[string]string{}, users: map[string]*list.List{}}
}

// Context keys of the requests the endpoint makes to mcp-go itself:
// adoptKey holds the id of the session an initialize adopts, endKey marks
// the DELETE that ends a session whichever user's it is.
type (
	adoptKey struct{}
	endKey   struct{}
)

// WithAdoption returns a copy of ctx that marks the initialize adopting
// session id, which another replica opened: the session id manager of its
// request generates id rather than a fresh one.
func WithAdoption(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, adoptKey{}, id)
}

// IsAdoption reports whether ctx is of a request that adopts a session
// (WithAdoption).
func IsAdoption(ctx context.Context) bool {
	return ctx.Value(adoptKey{}) != nil
}

// WithEnding returns a copy of ctx that marks the endpoint's own DELETE of
// a session, such as one another replica ended: the session id manager of
// its request ends the session whichever user's it is, as mcp-go's
// sweeper of idle sessions does.
func WithEnding(ctx context.Context) context.Context {
	return context.WithValue(ctx, endKey{}, true)
}

var _ mcpserver.SessionIdManagerResolver = (*Book)(nil)

// ResolveSessionIdManager returns the manager for r's user.
func (b *Book) ResolveSessionIdManager(r *http.Request) mcpserver.SessionIdManager {
	if r == nil || r.Context().Value(endKey{}) != nil { // the sweeper, or another replica's DELETE: it may end any session
		return userSessions{b: b, sweeper: true}
	}
	adopt, _ := r.Context().Value(adoptKey{}).(string)
	return userSessions{b: b, user: mcpgateway.UserFrom(r.Context()), adopt: adopt}
}

// newID returns a fresh random session id, owned by user (Add).
func (b *Book) newID(user, prefix string) string {
	var raw [16]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails
	id := prefix + hex.EncodeToString(raw[:])
	b.Add(id, user)
	return id
}

// Add records session id, owned by user, unless it is recorded already.
// A user at perUser sessions loses their least recently used one; past
// max sessions in all, the least recently used one of any user goes. Each
// goes to evicted, after mu is released: Add does no I/O and waits for no
// session to end.
func (b *Book) Add(id, user string) {
	h := Hash(id)
	gone := make([]Eviction, 0, 2) // at most one per cap
	b.mu.Lock()
	if _, ok := b.owners[id]; ok {
		b.mu.Unlock()
		return
	}
	if mine := b.users[user]; mine != nil {
		for mine.Len() >= b.perUser {
			gone = append(gone, b.evictLocked(mine.Back().Value.(*owned), CauseUser))
		}
	}
	for b.lru.Len() >= b.max {
		gone = append(gone, b.evictLocked(b.lru.Back().Value.(*owned), CauseService))
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
			ev.Done()
			continue
		}
		b.evicted(ev)
	}
}

// evictLocked forgets o and marks it being ended until the eviction's
// Done is called. b.mu must be held.
func (b *Book) evictLocked(o *owned, cause string) Eviction {
	b.removeLocked(o)
	ev := Eviction{ID: o.id, User: o.user, Cause: cause, Done: func() {}}
	if _, busy := b.adopting[o.id]; busy { // an adoption under way: it finds the session gone
		return ev
	}
	if b.adopting == nil {
		b.adopting = map[string]chan struct{}{}
	}
	c := make(chan struct{})
	b.adopting[o.id] = c
	ev.Done = func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.adopting, o.id)
		close(c)
	}
	return ev
}

// removeLocked forgets o. b.mu must be held.
func (b *Book) removeLocked(o *owned) {
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
func (b *Book) usedLocked(o *owned) {
	b.lru.MoveToFront(o.all)
	b.users[o.user].MoveToFront(o.mine)
}

// TouchDue reports whether session id's use was last recorded in the
// SessionStore longer than every ago, and if so counts it recorded now.
func (b *Book) TouchDue(id string, every time.Duration) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.owners[id]
	if !ok || time.Since(o.shared) < every {
		return false
	}
	o.shared = time.Now()
	return true
}

// Touched counts session id's use recorded in the SessionStore now.
func (b *Book) Touched(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if o, ok := b.owners[id]; ok {
		o.shared = time.Now()
	}
}

// StartAdopt marks session id being adopted and returns the func that
// unmarks it; if it is already, it returns false and the channel that
// closes when that adoption is done.
func (b *Book) StartAdopt(id string) (done func(), ok bool, wait <-chan struct{}) {
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

// Adoption returns the channel that closes when the adoption of session
// id in progress is done, or nil when none is.
func (b *Book) Adoption(id string) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.adopting[id]
}

// Owner returns the user of session id, if it is open here.
func (b *Book) Owner(id string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.owners[id]
	if !ok {
		return "", false
	}
	return o.user, true
}

// ByHash returns the id of the session whose Hash is h, or "".
func (b *Book) ByHash(h string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.hashes[h]
}

// OwnedBy reports whether session id is open and belongs to user, marking
// it used.
func (b *Book) OwnedBy(id, user string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.owners[id]
	if !ok || o.user != user {
		return false
	}
	b.usedLocked(o)
	return true
}

// Streaming reports whether session id is open, belongs to user and has
// its GET stream open, marking it used.
func (b *Book) Streaming(id, user string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.owners[id]
	if !ok || o.user != user || o.streams == 0 {
		return false
	}
	b.usedLocked(o)
	return true
}

// WaitStreamingHash waits until the session whose Hash is h is open here
// with its GET stream open, or ctx ends: a session another replica opened
// may be adopted here by that very GET. It returns the session's id and
// user, and whether the stream is open.
func (b *Book) WaitStreamingHash(ctx context.Context, h string) (id, user string, ok bool) {
	o := b.waitStream(ctx, func() *owned { return b.owners[b.hashes[h]] })
	if o == nil {
		return "", "", false
	}
	return o.id, o.user, true
}

// waitStream waits until find (called with mu held) returns a session
// with its GET stream open, marks it used and returns it; nil once ctx
// ends.
func (b *Book) waitStream(ctx context.Context, find func() *owned) *owned {
	for {
		b.mu.Lock()
		if o := find(); o != nil && o.streams > 0 {
			b.usedLocked(o)
			b.mu.Unlock()
			return o
		}
		wake := b.openedLocked()
		b.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil
		}
	}
}

// StreamOpened returns a channel closed when the next GET stream, of any
// session, opens: take it before checking Streaming, and check again once
// it is closed.
func (b *Book) StreamOpened() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.openedLocked()
}

func (b *Book) openedLocked() chan struct{} {
	if b.opened == nil {
		b.opened = make(chan struct{})
	}
	return b.opened
}

// OpenStream counts a GET stream of session id until the returned func is
// called.
func (b *Book) OpenStream(id string) (closed func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.owners[id]
	if !ok {
		return func() {}
	}
	o.streams++
	if b.opened != nil {
		close(b.opened)
		b.opened = nil
	}
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		o.streams--
	}
}

// Forget forgets session id, if it is open here.
func (b *Book) Forget(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if o, ok := b.owners[id]; ok {
		b.removeLocked(o)
	}
}

// Len returns the number of sessions open here.
func (b *Book) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.owners)
}

// Streams returns the number of GET streams open now, of every session.
func (b *Book) Streams() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, o := range b.owners {
		n += o.streams
	}
	return n
}

// Unregistered forgets an SSE session once its stream has closed (mcp-go
// unregisters it; an OnUnregisterSession hook); an HTTP session outlives
// its GET stream.
func (b *Book) Unregistered(_ context.Context, s mcpserver.ClientSession) {
	if id := s.SessionID(); strings.HasPrefix(id, SSEPrefix) {
		b.Forget(id)
	}
}

// GenerateSSE is the SSE transport's session id generator: it opens a
// session of r's user.
func (b *Book) GenerateSSE(_ context.Context, r *http.Request) (string, error) {
	return b.newID(mcpgateway.UserFrom(r.Context()), SSEPrefix), nil
}

// userSessions is the session id manager of one request, for its user.
type userSessions struct {
	b       *Book
	user    string
	sweeper bool
	// adopt is the id of the session another replica opened that this
	// request's initialize adopts, or "".
	adopt string
}

func (u userSessions) Generate() string {
	if u.adopt != "" {
		u.b.Add(u.adopt, u.user)
		return u.adopt
	}
	return u.b.newID(u.user, HTTPPrefix)
}

func (u userSessions) Validate(id string) (bool, error) {
	if !u.b.OwnedBy(id, u.user) {
		return false, fmt.Errorf("%w", u.b.unknown)
	}
	return false, nil
}

func (u userSessions) Terminate(id string) (bool, error) {
	if !u.sweeper && !u.b.OwnedBy(id, u.user) {
		return false, fmt.Errorf("%w", u.b.unknown)
	}
	u.b.Forget(id)
	return false, nil
}

// Negotiated records the protocol version a session's initialize agreed
// on (an AfterInitialize hook).
func (b *Book) Negotiated(ctx context.Context, _ any, _ *mcp.InitializeRequest, res *mcp.InitializeResult) {
	var sid string
	if s := mcpserver.ClientSessionFromContext(ctx); s != nil {
		sid = s.SessionID()
	}
	if res == nil || sid == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if o, ok := b.owners[sid]; ok {
		o.version = res.ProtocolVersion
	}
}

// Resumable reports whether session id is user's and negotiated a
// protocol with resumable streams (2025-11-25 or later).
func (b *Book) Resumable(id, user string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.owners[id]
	return ok && o.user == user && o.version >= mcp.ProtocolVersion20251125
}
