package mcpendpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpendpoint/internal/jsonrpc"
	"github.com/elysia-go/elysia/mcpgateway"
)

// MaxSubscriptionsPerSession bounds the resources one MCP session may be
// subscribed to at once; a subscription past it is refused
// (ErrTooManySubscriptions).
const MaxSubscriptionsPerSession = 100

// Subscriber is a Resourceful upstream that passes on resources/subscribe;
// *mcpgateway.Gateway is one. updated is called for each
// notifications/resources/updated of uri until stop; it must not block.
type Subscriber interface {
	Subscribe(ctx context.Context, uri string, updated func()) (stop func(context.Context) error, err error)
}

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
	// wg owns the goroutines that unsubscribe the URIs of an ended
	// session, and that end an evicted one (evict.go); the endpoint's
	// Close waits for them.
	wg goGroup
}

// subscription is one URI a session is subscribed to.
type subscription struct {
	user string
	// stop ends it at the server; nil while the server is being asked.
	stop func(context.Context) error
}

// onRequest takes resources/subscribe and resources/unsubscribe before
// mcp-go does (which then only acknowledges them), and refuses a
// 2026-07-28 retry whose requestState is not good (checkRetry): an error
// refuses the request with it (-32600, and 400 over HTTP). Every other
// request passes untouched.
func (e *Endpoint) onRequest(ctx context.Context, _ any, message any) error {
	raw, ok := message.(json.RawMessage)
	if !ok || (!bytes.Contains(raw, []byte(`"requestState"`)) && !bytes.Contains(raw, []byte(`"resources/`))) {
		return nil // the cheap test: most requests are none of these
	}
	m, ok := jsonrpc.Decode(raw)
	if !ok {
		return nil // mcp-go answers what it cannot parse
	}
	var p struct {
		URI string `json:"uri"`
	}
	switch m.Method {
	case string(mcp.MethodToolsCall):
		return e.checkRetry(ctx, m)
	case string(mcp.MethodResourcesSubscribe):
		if m.DecodeParams(&p) == nil {
			return e.subscribe(ctx, p.URI)
		}
	case string(mcp.MethodResourcesUnsubscribe):
		if m.DecodeParams(&p) == nil {
			e.unsubscribe(ctx, p.URI)
		}
	}
	return nil
}

// subscribe subscribes ctx's session to uri at the server that lists it.
// A URI the session is subscribed to already (or being subscribed to)
// succeeds at once.
func (e *Endpoint) subscribe(ctx context.Context, uri string) error {
	sid := SessionID(ctx)
	if sid == "" || uri == "" {
		return nil // mcp-go refuses an empty URI; a session-less request holds nothing
	}
	user := mcpgateway.UserFrom(ctx)
	slot, n := e.subs.reserve(sid, uri, user)
	switch {
	case slot == nil && n < 0:
		return nil // held already
	case slot == nil:
		return fmt.Errorf("%w: this MCP session holds %d, the most it may; unsubscribe from one first", ErrTooManySubscriptions, n)
	}
	// Asked apart from the request: a client that gives up (or ends its
	// session) once the server has the subscribe would leave the server
	// holding a subscription nobody ends; answered, it is ended below.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.opts.ListTimeout)
	defer cancel()
	stop, err := e.subscribeUpstream(sctx, sid, user, uri)
	if err != nil {
		e.subs.release(sid, uri, slot)
		return err
	}
	if !e.subs.fill(sid, uri, slot, stop) {
		// The session ended, or unsubscribed, while the server was asked.
		e.stopSubscription(context.WithoutCancel(ctx), uri, subscription{user: user, stop: stop})
	}
	return nil
}

// subscribeUpstream subscribes session sid of user to uri at the server
// that lists it and returns the func that ends that subscription.
func (e *Endpoint) subscribeUpstream(ctx context.Context, sid, user, uri string) (stop func(context.Context) error, err error) {
	r, name := e.resourceOwner(ctx, uri)
	if r == nil {
		return nil, fmt.Errorf("no server of this service lists resource %q: %w", uri, mcpserver.ErrResourceNotFound)
	}
	sub, ok := r.(Subscriber)
	if !ok {
		return nil, fmt.Errorf("server %q cannot be subscribed to: %w", name, ErrNotSubscribable)
	}
	updated := func() { e.notifyUpdated(sid, user, uri) }
	// The gateway takes updated before it asks: the server may send an
	// update before it answers.
	stop, err = sub.Subscribe(mcpgateway.WithUser(ctx, user), uri, updated)
	if err != nil {
		return nil, fmt.Errorf("server %q refused the subscription to %q: %w", name, uri, err)
	}
	return stop, nil
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

// unsubscribe ends ctx's session's subscription to uri; one it does not
// hold is no error.
func (e *Endpoint) unsubscribe(ctx context.Context, uri string) {
	if sid := SessionID(ctx); !e.unsubscribeSession(ctx, sid, uri) {
		e.relayUnsubscribe(sid, uri) // another replica may hold it
	}
}

// unsubscribeSession ends session sid's subscription to uri here and
// reports whether it held one.
func (e *Endpoint) unsubscribeSession(ctx context.Context, sid, uri string) bool {
	e.subs.mu.Lock()
	s, ok := e.subs.bySession[sid][uri]
	e.subs.deleteLocked(sid, uri)
	e.subs.mu.Unlock()
	if ok && s.stop != nil { // one being made is undone by its subscriber
		e.stopSubscription(ctx, uri, *s)
	}
	return ok
}

// stopSubscription unsubscribes s at its server, within ListTimeout.
func (e *Endpoint) stopSubscription(ctx context.Context, uri string, s subscription) {
	ctx, cancel := context.WithTimeout(mcpgateway.WithUser(ctx, s.user), e.opts.ListTimeout)
	defer cancel()
	if err := s.stop(ctx); err != nil {
		e.logger.Warn("aggregate endpoint: resources/unsubscribe failed", "uri", uri, "user", s.user, "err", err.Error())
	}
}

// sessionEnded ends the subscriptions of a session that ended, on a
// goroutine Close waits for: the hook must not wait on a server.
func (e *Endpoint) sessionEnded(_ context.Context, session mcpserver.ClientSession) {
	sid := session.SessionID()
	e.streams.EndSession(sid)
	e.subs.mu.Lock()
	subs := e.subs.bySession[sid]
	delete(e.subs.bySession, sid)
	e.subs.mu.Unlock()
	if len(subs) == 0 {
		return
	}
	e.subs.wg.Go(func() {
		for uri, s := range subs {
			if s.stop != nil { // one being made is undone by its subscriber
				e.stopSubscription(context.Background(), uri, *s)
			}
		}
	})
}
