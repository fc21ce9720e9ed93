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
func (g *Gateway) notified(s *session.Session, n mcp.JSONRPCNotification) {
	if n.Method != string(mcp.MethodNotificationToolsListChanged) || s != g.conn.Current() {
		return
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.changes++
	if g.relisting {
		g.mu.Unlock()
		return // the running relist sees this change
	}
	g.relisting = true
	g.wg.Go(g.relist)
	g.mu.Unlock()
}

// relistEvery is how often, at most, list_changed notifications make a
// gateway list its tools again: a server that sends them without end costs
// one listing per interval, not one per notification.
const relistEvery = 500 * time.Millisecond

// relist lists the tools at once, then again every relistEvery while
// list_changed notifications keep coming; notified starts it on g.wg.
func (g *Gateway) relist() {
	ctx := g.conn.Lifetime()
	for {
		g.mu.Lock()
		seen := g.changes
		g.mu.Unlock()
		if err := g.listOnce(ctx); err != nil {
			g.logger.Warn("refresh tools after list_changed", logKeyErr, err)
		}
		t := time.NewTimer(relistEvery)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		g.mu.Lock()
		if g.closed || ctx.Err() != nil || g.changes == seen {
			g.relisting = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
	}
}

// listOnce is toolsHere without its relists: one listing unless the cache
// is fresh, or a wait for the one in flight.
func (g *Gateway) listOnce(ctx context.Context) error {
	g.mu.Lock()
	if g.freshLocked(g.cache) {
		g.mu.Unlock()
		return nil
	}
	f := g.listing
	if f == nil {
		f = &listFlight{done: make(chan struct{})}
		g.listing = f
		changes := g.changes
		g.mu.Unlock()
		g.fetchTools(ctx, f, changes)
	} else {
		g.mu.Unlock()
	}
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}
