// Package samplerelay keeps the MCP endpoint's part of sampling requests
// relayed between its replicas: the sessions registered here (to put
// another replica's request to), the requests here waiting for a result
// another replica relays, and the goroutines putting relayed requests to
// clients. It knows nothing of how the replicas send each other messages.
package samplerelay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"sync"

	mcpserver "github.com/mark3labs/mcp-go/server"
)

// Result is what another replica relays for a sampling request: the
// client's result, or why there is none.
type Result struct {
	Body  json.RawMessage
	Error string
}

// State is the endpoint's part of relayed sampling. Create it with New;
// it is safe for concurrent use.
type State struct {
	// mu guards waiting, live and closed.
	mu      sync.Mutex
	waiting map[string]*wait
	live    map[string]mcpserver.ClientSession
	// closed says Close has begun: Go starts no more goroutines.
	closed bool
	// wg owns the goroutines of Go; ctx ends them (Close).
	wg     sync.WaitGroup
	ctx    context.Context //nolint:containedctx // the lifetime of those goroutines, ended by Close
	cancel context.CancelFunc
}

// New returns an empty State.
func New() *State {
	ctx, cancel := context.WithCancel(context.Background())
	return &State{waiting: map[string]*wait{}, live: map[string]mcpserver.ClientSession{}, ctx: ctx, cancel: cancel}
}

// Registered records cs, a session mcp-go registered (its hook), to put
// relayed requests to.
func (s *State) Registered(_ context.Context, cs mcpserver.ClientSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.live[cs.SessionID()] = cs
}

// Unregistered forgets cs, a session mcp-go unregistered (its hook),
// unless another session with its id replaced it.
func (s *State) Unregistered(_ context.Context, cs mcpserver.ClientSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live[cs.SessionID()] == cs {
		delete(s.live, cs.SessionID())
	}
}

// Session returns the session registered here under id, or nil.
func (s *State) Session(id string) mcpserver.ClientSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live[id]
}

// wait is the wait of one relayed sampling request: its result, and
// whether a replica has taken it.
type wait struct {
	results   chan Result
	taken     chan struct{}
	takenOnce sync.Once
}

// Wait registers a wait for the result of a sampling request relayed from
// here under a new random id, reply: the result Deliver gets for it comes
// on results, and taken is closed once Taken reports a replica put it to
// the client, until done is called.
func (s *State) Wait() (reply string, results <-chan Result, taken <-chan struct{}, done func()) {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	reply = hex.EncodeToString(b[:])
	w := &wait{results: make(chan Result, 1), taken: make(chan struct{})}
	s.mu.Lock()
	s.waiting[reply] = w
	s.mu.Unlock()
	return reply, w.results, w.taken, func() {
		s.mu.Lock()
		delete(s.waiting, reply)
		s.mu.Unlock()
	}
}

// Deliver hands res to the wait of reply, if it still waits and has no
// result yet.
func (s *State) Deliver(reply string, res Result) {
	s.mu.Lock()
	w := s.waiting[reply]
	s.mu.Unlock()
	if w != nil {
		select {
		case w.results <- res:
		default: // answered already
		}
	}
}

// Taken tells the wait of reply, if it still waits, that a replica has
// put its request to the client.
func (s *State) Taken(reply string) {
	s.mu.Lock()
	w := s.waiting[reply]
	s.mu.Unlock()
	if w != nil {
		w.takenOnce.Do(func() { close(w.taken) })
	}
}

// Go runs f on a goroutine that Close ends (through f's ctx) and waits
// for, unless Close has begun; it reports whether f was started.
func (s *State) Go(f func(ctx context.Context)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Go(func() { f(s.ctx) })
	return true
}

// Close ends the goroutines of Go and waits for them. It may be called
// more than once.
func (s *State) Close() {
	s.cancel()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.wg.Wait()
}
