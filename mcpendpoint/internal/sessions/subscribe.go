package sessions

import (
	"context"
	"errors"
	"fmt"
	"sync"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway"
)

// MaxSubscriptionsPerSession bounds the resources one MCP session may be
// subscribed to at once; a subscription past it is refused
// (ErrTooManySubscriptions).
const MaxSubscriptionsPerSession = 100

// ErrTooManySubscriptions is matched by the error of a resources/subscribe
// past MaxSubscriptionsPerSession.
var ErrTooManySubscriptions = errors.New("too many resource subscriptions")

// subscriptions are the resources each MCP session is subscribed to: a
// client's resources/subscribe subscribes at the server that lists the
// URI, and that server's notifications/resources/updated for it go to the
// client's session. They end with resources/unsubscribe, or the session.
type subscriptions struct {
	// mu guards bySession.
	mu sync.Mutex
	// bySession holds, by session id then URI, each subscription, and
	// each one being made: its slot is taken before the server is asked,
	// so concurrent subscribes cannot pass the cap, and a slot gone when
	// the server answers (the session ended, or unsubscribed meanwhile)
	// tells the subscriber to undo what it made.
	bySession map[string]map[string]*subscription
}

// subscription is one URI a session is subscribed to.
type subscription struct {
	user string
	// stop ends it at the server; nil while the server is being asked.
	stop func(context.Context) error
}

// Subscribe subscribes ctx's session to uri at the server that lists it
// (Config.SubscribeUpstream). A URI the session is subscribed to already
// (or being subscribed to) succeeds at once.
func (h *Hub) Subscribe(ctx context.Context, uri string) error {
	sid := sessionID(ctx)
	if sid == "" || uri == "" {
		return nil // mcp-go refuses an empty URI; a session-less request holds nothing
	}
	user := mcpgateway.UserFrom(ctx)
	slot, n := h.subs.reserve(sid, uri, user)
	switch {
	case slot == nil && n < 0:
		return nil // held already
	case slot == nil:
		return fmt.Errorf("%w: this MCP session holds %d, the most it may; unsubscribe from one first", ErrTooManySubscriptions, n)
	}
	// Asked apart from the request: a client that gives up (or ends its
	// session) once the server has the subscribe would leave the server
	// holding a subscription nobody ends; answered, it is ended below.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.ListTimeout)
	defer cancel()
	stop, err := h.SubscribeUpstream(sctx, user, uri, func() { h.NotifyUpdated(sid, user, uri) })
	if err != nil {
		h.subs.release(sid, uri, slot)
		return err
	}
	if !h.subs.fill(sid, uri, slot, stop) {
		// The session ended, or unsubscribed, while the server was asked.
		h.stopSubscription(context.WithoutCancel(ctx), uri, subscription{user: user, stop: stop})
	}
	return nil
}

// reserve takes session sid's slot for uri and returns it; when it cannot,
// it returns nil and -1 if the session holds uri already (or is being
// subscribed to it), else the number of subscriptions that fill the cap.
func (s *subscriptions) reserve(sid, uri, user string) (slot *subscription, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	held := s.bySession[sid]
	if _, dup := held[uri]; dup {
		return nil, -1
	}
	if len(held) >= MaxSubscriptionsPerSession {
		return nil, len(held)
	}
	if s.bySession == nil {
		s.bySession = map[string]map[string]*subscription{}
	}
	if held == nil {
		held = map[string]*subscription{}
		s.bySession[sid] = held
	}
	slot = &subscription{user: user}
	held[uri] = slot
	return slot, 0
}

// release gives back slot, session sid's for uri, if it still holds it.
func (s *subscriptions) release(sid, uri string, slot *subscription) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bySession[sid][uri] == slot {
		s.deleteLocked(sid, uri)
	}
}

// fill records stop in slot and reports whether slot is still session
// sid's for uri; when it is not, the caller ends the subscription.
func (s *subscriptions) fill(sid, uri string, slot *subscription, stop func(context.Context) error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bySession[sid][uri] != slot {
		return false
	}
	slot.stop = stop
	return true
}

// deleteLocked forgets session sid's subscription to uri; s.mu must be
// held.
func (s *subscriptions) deleteLocked(sid, uri string) {
	delete(s.bySession[sid], uri)
	if len(s.bySession[sid]) == 0 {
		delete(s.bySession, sid)
	}
}

// Unsubscribe ends ctx's session's subscription to uri; one it does not
// hold is no error.
func (h *Hub) Unsubscribe(ctx context.Context, uri string) {
	if sid := sessionID(ctx); !h.unsubscribeSession(ctx, sid, uri) {
		h.RelayUnsubscribe(sid, uri) // another replica may hold it
	}
}

// unsubscribeSession ends session sid's subscription to uri here and
// reports whether it held one.
func (h *Hub) unsubscribeSession(ctx context.Context, sid, uri string) bool {
	h.subs.mu.Lock()
	s, ok := h.subs.bySession[sid][uri]
	h.subs.deleteLocked(sid, uri)
	h.subs.mu.Unlock()
	if ok && s.stop != nil { // one being made is undone by its subscriber
		h.stopSubscription(ctx, uri, *s)
	}
	return ok
}

// stopSubscription unsubscribes s at its server, within ListTimeout.
func (h *Hub) stopSubscription(ctx context.Context, uri string, s subscription) {
	ctx, cancel := context.WithTimeout(mcpgateway.WithUser(ctx, s.user), h.ListTimeout)
	defer cancel()
	if err := s.stop(ctx); err != nil {
		h.Logger.Warn("aggregate endpoint: resources/unsubscribe failed", "uri", uri, "user", s.user, "err", err.Error())
	}
}

// sessionEnded forgets the call streams of a session that ended, and ends
// its subscriptions on a goroutine of Config.Go: the hook must not wait on
// a server.
func (h *Hub) sessionEnded(_ context.Context, session mcpserver.ClientSession) {
	sid := session.SessionID()
	h.streams.EndSession(sid)
	h.subs.mu.Lock()
	subs := h.subs.bySession[sid]
	delete(h.subs.bySession, sid)
	h.subs.mu.Unlock()
	if len(subs) == 0 {
		return
	}
	h.Go(func() {
		for uri, s := range subs {
			if s.stop != nil { // one being made is undone by its subscriber
				h.stopSubscription(context.Background(), uri, *s)
			}
		}
	})
}

// Subscriptions returns the number of subscriptions the sessions here
// hold or are making.
func (h *Hub) Subscriptions() int {
	h.subs.mu.Lock()
	defer h.subs.mu.Unlock()
	n := 0
	for _, held := range h.subs.bySession {
		n += len(held)
	}
	return n
}
