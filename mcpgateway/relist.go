package mcpgateway

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
)

// notified handles a notification from session s. On
// notifications/tools/list_changed from the current session the cache goes
// stale (a listing in flight too) and is refreshed in the background, on a
// goroutine the gateway owns, at most every relistEvery (relist).
// notifications/resources/updated goes to the URI's subscribers
// (subscribe.go), and a list_changed of resources or prompts to the
// Observer (listchanged.go).
func (v *view) notified(s *session.Session, n mcp.JSONRPCNotification) {
	if n.Method == string(mcp.MethodNotificationResourceUpdated) {
		v.resourceUpdated(s, n)
		return
	}
	if isListsChanged(n) {
		v.noteListsChanged(s)
		return
	}
	if n.Method != string(mcp.MethodNotificationToolsListChanged) || !v.serves(s) {
		return
	}
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return
	}
	v.changes++
	if v.relisting {
		v.mu.Unlock()
		return // the running relist sees this change
	}
	v.relisting = true
	v.wg.Go(v.relist)
	v.mu.Unlock()
}

// relistEvery is how often, at most, list_changed notifications make a
// gateway list its tools again: a server that sends them without end costs
// one listing per interval, not one per notification.
const relistEvery = 500 * time.Millisecond

// relist lists the tools at once, then again every relistEvery while
// list_changed notifications keep coming; notified starts it on g.wg.
func (v *view) relist() {
	ctx := v.conns[0].Lifetime()
	for {
		v.mu.Lock()
		seen := v.changes
		v.mu.Unlock()
		if err := v.listOnce(ctx, v.listCopy()); err != nil {
			v.logger.Warn("refresh tools after list_changed", logKeyErr, err)
		}
		t := time.NewTimer(relistEvery)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		v.mu.Lock()
		if v.closed || ctx.Err() != nil || v.changes == seen {
			v.relisting = false
			v.mu.Unlock()
			return
		}
		v.mu.Unlock()
	}
}

// listOnce is toolsHere without its relists: one listing unless the cache
// is fresh, or a wait for the one in flight.
func (v *view) listOnce(ctx context.Context, at int) error {
	v.mu.Lock()
	if v.freshLocked(v.cache) {
		v.mu.Unlock()
		return nil
	}
	f := v.listing
	if f == nil {
		f = &listFlight{done: make(chan struct{})}
		v.listing = f
		changes := v.changes
		v.mu.Unlock()
		v.fetchTools(ctx, f, changes, at)
	} else {
		v.mu.Unlock()
	}
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}
