package mcpgateway

import (
	"context"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/tools"
)

// Subscribe asks the server for notifications/resources/updated of uri
// (resources/subscribe), on the session of ctx's user for a per-user
// server, and calls updated for each one that session sends until the
// returned stop is called. stop unsubscribes (resources/unsubscribe) once
// no other subscriber of uri on that session is left; its ctx bounds that
// request, and it may be called more than once.
//
// Several subscribers of one URI on one session share one subscription
// upstream. updated runs on the transport's read loop: it must be quick
// and must not block. A subscription does not outlive the session: after
// the server reconnects, no more updates come until the caller subscribes
// again.
func (g *Gateway) Subscribe(ctx context.Context, uri string, updated func()) (stop func(context.Context) error, err error) {
	if uri == "" {
		return nil, &tools.ArgumentError{Tool: "resources/subscribe", Problems: []string{"uri is required"}}
	}
	var key watchKey
	var id uint64
	err = g.requestOn(ctx, "resources/subscribe", func(ctx context.Context, v *view, s *session.Session) error {
		key = watchKey{user: v.user, uri: uri}
		// Registered first: the server may send an update before it answers.
		first := false
		id, first = g.watches.add(key, updated)
		if !first {
			return nil
		}
		req := mcp.SubscribeRequest{}
		req.Params.URI = uri
		//lint:ignore SA1019 resources/subscribe of the released protocol versions the gateway speaks
		if err := s.Client().Subscribe(ctx, req); err != nil { //nolint:staticcheck // see above
			g.watches.remove(key, id)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var once sync.Once
	return func(ctx context.Context) error {
		var err error
		once.Do(func() {
			if !g.watches.remove(key, id) {
				return
			}
			err = g.request(ctx, "resources/unsubscribe", func(ctx context.Context, s *session.Session) error {
				req := mcp.UnsubscribeRequest{}
				req.Params.URI = uri
				//lint:ignore SA1019 resources/unsubscribe of the released protocol versions the gateway speaks
				return s.Client().Unsubscribe(ctx, req) //nolint:staticcheck // see above
			})
		})
		return err
	}, nil
}

// resourceUpdated passes a notifications/resources/updated of session s
// to the subscribers of its URI on v's sessions. It runs on the read loop.
func (v *view) resourceUpdated(s *session.Session, n mcp.JSONRPCNotification) {
	uri, _ := n.Params.AdditionalFields["uri"].(string)
	if uri == "" || s != v.conn.Current() {
		return
	}
	for _, f := range v.g.watches.of(watchKey{user: v.user, uri: uri}) {
		f()
	}
}

// watchKey names a subscription: a URI on the session of a user ("" for
// the shared session).
type watchKey struct{ user, uri string }

// watchBook is a gateway's resource subscribers. Its zero value is ready.
type watchBook struct {
	mu   sync.Mutex
	seq  uint64
	subs map[watchKey]map[uint64]func()
}

// add registers f for k and reports whether it is k's first subscriber.
func (w *watchBook) add(k watchKey, f func()) (id uint64, first bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.subs == nil {
		w.subs = map[watchKey]map[uint64]func(){}
	}
	if w.subs[k] == nil {
		w.subs[k] = map[uint64]func(){}
	}
	w.seq++
	w.subs[k][w.seq] = f
	return w.seq, len(w.subs[k]) == 1
}

// remove unregisters id of k and reports whether k has no subscriber
// left because of it.
func (w *watchBook) remove(k watchKey, id uint64) (last bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.subs[k][id]; !ok {
		return false
	}
	delete(w.subs[k], id)
	if len(w.subs[k]) > 0 {
		return false
	}
	delete(w.subs, k)
	return true
}

// of returns k's subscribers.
func (w *watchBook) of(k watchKey) []func() {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]func(), 0, len(w.subs[k]))
	for _, f := range w.subs[k] {
		out = append(out, f)
	}
	return out
}
