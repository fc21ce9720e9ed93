package mcpendpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

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
	mu        sync.Mutex
	bySession map[string]map[string]subscription // by session id, then URI
	// wg owns the goroutines that unsubscribe the URIs of an ended session.
	wg sync.WaitGroup
}

// subscription is one URI a session is subscribed to.
type subscription struct {
	user string
	stop func(context.Context) error
}

// subscribeRequest is what the endpoint reads of a request to know whether
// it is a resources/subscribe or unsubscribe.
type subscribeRequest struct {
	Method string `json:"method"`
	Params struct {
		URI string `json:"uri"`
	} `json:"params"`
}

// onRequest takes resources/subscribe and resources/unsubscribe before
// mcp-go does (which then only acknowledges them): an error refuses the
// request with it. Every other request passes untouched.
func (e *Endpoint) onRequest(ctx context.Context, _ any, message any) error {
	raw, ok := message.(json.RawMessage)
	if !ok || !bytes.Contains(raw, []byte(`"resources/`)) {
		return nil // the cheap test: most requests are not these
	}
	var req subscribeRequest
	if json.Unmarshal(raw, &req) != nil {
		return nil // mcp-go answers what it cannot parse
	}
	switch req.Method {
	case string(mcp.MethodResourcesSubscribe):
		return e.subscribe(ctx, req.Params.URI)
	case string(mcp.MethodResourcesUnsubscribe):
		e.unsubscribe(ctx, req.Params.URI)
	}
	return nil
}

// subscribe subscribes ctx's session to uri at the server that lists it.
// A URI the session is subscribed to already succeeds at once.
func (e *Endpoint) subscribe(ctx context.Context, uri string) error {
	sid := SessionID(ctx)
	if sid == "" || uri == "" {
		return nil // mcp-go refuses an empty URI; a session-less request holds nothing
	}
	e.subs.mu.Lock()
	_, dup := e.subs.bySession[sid][uri]
	n := len(e.subs.bySession[sid])
	e.subs.mu.Unlock()
	switch {
	case dup:
		return nil
	case n >= MaxSubscriptionsPerSession:
		return fmt.Errorf("%w: this MCP session holds %d, the most it may; unsubscribe from one first", ErrTooManySubscriptions, n)
	}
	r, name := e.resourceOwner(ctx, uri)
	if r == nil {
		return fmt.Errorf("no server of this service lists resource %q: %w", uri, mcpserver.ErrResourceNotFound)
	}
	sub, ok := r.(Subscriber)
	if !ok {
		return fmt.Errorf("server %q cannot be subscribed to: %w", name, ErrNotSubscribable)
	}
	user := mcpgateway.UserFrom(ctx)
	updated := func() { e.notifyUpdated(sid, user, uri) }
	// The gateway takes updated before it asks: the server may send an
	// update before it answers.
	stop, err := sub.Subscribe(mcpgateway.WithUser(ctx, user), uri, updated)
	if err != nil {
		return fmt.Errorf("server %q refused the subscription to %q: %w", name, uri, err)
	}
	e.subs.mu.Lock()
	if e.subs.bySession == nil {
		e.subs.bySession = map[string]map[string]subscription{}
	}
	if e.subs.bySession[sid] == nil {
		e.subs.bySession[sid] = map[string]subscription{}
	}
	old, dup := e.subs.bySession[sid][uri]
	e.subs.bySession[sid][uri] = subscription{user: user, stop: stop}
	e.subs.mu.Unlock()
	if dup { // two subscribes of one session raced: one is enough
		_ = old.stop(ctx) // the other holds the server's subscription
	}
	return nil
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
	delete(e.subs.bySession[sid], uri)
	if len(e.subs.bySession[sid]) == 0 {
		delete(e.subs.bySession, sid)
	}
	e.subs.mu.Unlock()
	if ok {
		e.stopSubscription(ctx, uri, s)
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
			e.stopSubscription(context.Background(), uri, s)
		}
	})
}
