package mcpgateway

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
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
// upstream. On a 2026-07-28 session the subscription is part of the
// session's subscriptions/listen stream, which is opened again with it. updated runs on the transport's read loop: it must be quick
// and must not block.
//
// A subscription outlives the session it was made on. When that session
// ends (the process exits, the HTTP server ends the session, a health
// ping fails) while the user has subscribers, the gateway connects again
// at once, through the usual connect (crash-loop back-off applies), and
// sends resources/subscribe again on the new session for every URI the
// user has subscribers of; so does any later session, however it was
// opened. Updates the server sent while no session was up are lost: a
// caller that must not miss a change reads the resource again when it
// sees fit. A connect that keeps failing is given up after a few tries
// (eagerTries); the next call or Subscribe connects and subscribes again.
// On a per-user server, a user with subscribers keeps their session
// however long it is idle (Options.UserIdle does not close it); when
// MaxUsers' eviction of the least recently used closes it, the user's
// next call opens a session subscribed again.
func (g *Gateway) Subscribe(ctx context.Context, uri string, updated func()) (stop func(context.Context) error, err error) {
	if uri == "" {
		return nil, &tools.ArgumentError{Tool: "resources/subscribe", Problems: []string{"uri is required"}}
	}
	var key watchKey
	var id uint64
	err = g.requestOn(ctx, "resources/subscribe", false, func(ctx context.Context, v *view, _ *session.Conn, s *session.Session) error {
		key = watchKey{user: v.user, uri: uri}
		// Registered first: the server may send an update before it answers.
		first := false
		id, first = g.watches.add(key, updated)
		if !first {
			return nil
		}
		if err := s.Subscribe(ctx, uri); err != nil {
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
				return s.Unsubscribe(ctx, uri)
			})
		})
		return err
	}, nil
}

// resourceUpdated passes a notifications/resources/updated of session s
// to the subscribers of its URI on v's sessions. It runs on the read loop.
func (v *view) resourceUpdated(s *session.Session, n mcp.JSONRPCNotification) {
	uri, _ := n.Params.AdditionalFields["uri"].(string)
	if uri == "" || !v.serves(s) {
		return
	}
	for _, f := range v.g.watches.of(watchKey{user: v.user, uri: uri}) {
		f()
	}
}

// eagerTries bounds the connects keepSubscribed makes after one session
// ended: a server still down after them is connected to at the next call
// or Subscribe, whose session is subscribed again all the same.
const eagerTries = 5

// eagerEvery is the least time between two connects keepSubscribed makes
// for a view, and the pause after a failed one outside back-off: a server
// that ends every session at once costs one connect per interval, not a
// busy loop, even though a session it ended is not a crash.
const eagerEvery = time.Second

// resubscribe is the view's session.Options.OnSessionUp: on each session
// after the first, it sends resources/subscribe for every URI the view's
// user has subscribers of, since the server forgot the subscriptions with
// the old session. On the first, only for those inherited from a closed
// view of the user (a per-user session evicted, or replaced after a secret
// changed): Subscribe subscribes on the view's sessions itself. Each
// request is bounded by the call timeout; a failure is logged and the
// subscribers stay (the next session tries again). It stops once s is no
// longer the current session: that session's own call does the rest.
func (v *view) resubscribe(ctx context.Context, s *session.Session, first bool) {
	uris := v.g.watches.uris(v.user)
	if first {
		inherited := make(map[string]bool, len(v.inherited))
		for _, uri := range v.inherited {
			inherited[uri] = true
		}
		uris = slices.DeleteFunc(uris, func(uri string) bool { return !inherited[uri] })
	}
	if !v.serves(s) {
		return // a copy failed over from: the serving one subscribes
	}
	conn := v.conns[v.listCopy()]
	failed := 0
	var firstErr error
	for _, uri := range uris {
		if ctx.Err() != nil || conn.Current() != s {
			return
		}
		err := conn.Do(ctx, "resources/subscribe", func(ctx context.Context, s *session.Session) error {
			return s.Subscribe(ctx, uri)
		})
		if err != nil {
			failed++
			firstErr = cmp.Or(firstErr, err)
		}
	}
	switch {
	case failed > 0:
		// err names the server and is masked (Conn.Do); the URIs are the
		// users', so they are not logged.
		v.logger.Warn("resources/subscribe after a reconnect failed", "failed", failed, "subscriptions", len(uris), logKeyErr, firstErr)
	case len(uris) > 0:
		v.logger.Info("subscribed again after a reconnect", "subscriptions", len(uris))
	}
}

// keepSubscribed is the view's session.Options.OnSessionDown: while the
// view's user has subscribers, it connects again at once (resubscribe then
// subscribes on the new session), so updates keep coming without waiting
// for a call. It connects through Conn.Session, so a crash loop's back-off
// applies: it waits for its end. It makes at most eagerTries connects, at
// least eagerEvery apart, and ends with the view (ctx, cancelled by Close).
// Nobody subscribed: nothing, and the next call connects, as ever.
func (v *view) keepSubscribed(ctx context.Context, _ *session.Session) {
	for try := range eagerTries {
		if !v.g.watches.any(v.user) || !v.g.serving() {
			return
		}
		v.mu.Lock()
		wait := time.Until(v.lastEager.Add(eagerEvery))
		v.mu.Unlock()
		conn := v.conns[v.listCopy()]
		if st := conn.Status(); !st.RetryAt.IsZero() {
			wait = max(wait, time.Until(st.RetryAt))
		}
		if !sleepCtx(ctx, wait) || !v.g.watches.any(v.user) {
			return
		}
		if conn.Current() != nil {
			return // a call connected meanwhile
		}
		v.mu.Lock()
		v.lastEager = time.Now()
		v.mu.Unlock()
		_, err := conn.Session(ctx)
		switch {
		case err == nil:
			return
		case ctx.Err() != nil, errors.Is(err, session.ErrClosed):
			return
		case errors.Is(err, session.ErrUnavailable) && !inBackoff(err):
			return // disabled, unresolved: no connect would do
		case errors.Is(err, mcpauth.ErrSignInRequired):
			return // the user must act; their next call connects
		}
		v.logger.Warn("reconnect for subscribers failed", "try", try+1, "of", eagerTries, logKeyErr, err)
	}
}

// serving reports whether g takes calls: not closed, not draining before
// being replaced or removed. It admits nothing (see enter): a reconnect
// waiting for a back-off must not hold up Drain.
func (g *Gateway) serving() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.closed && !g.draining
}

// inBackoff reports whether err refuses a connect during a crash loop's
// back-off, which ends at a time it says.
func inBackoff(err error) bool {
	var ra interface{ RetryAt() time.Time }
	return errors.As(err, &ra)
}

// sleepCtx waits for d, or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
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

// uris returns the URIs user has subscribers of ("" for the shared
// session), in no order.
func (w *watchBook) uris(user string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for k := range w.subs {
		if k.user == user {
			out = append(out, k.uri)
		}
	}
	return out
}

// any reports whether user has subscribers of any URI.
func (w *watchBook) any(user string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k := range w.subs {
		if k.user == user {
			return true
		}
	}
	return false
}

// users returns the users with subscribers of any URI.
func (w *watchBook) users() map[string]struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]struct{}, len(w.subs))
	for k := range w.subs {
		out[k.user] = struct{}{}
	}
	return out
}
