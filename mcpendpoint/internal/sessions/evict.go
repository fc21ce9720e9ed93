package sessions

import (
	"context"
	"strings"
	"time"

	"github.com/elysia-go/elysia/mcpendpoint/internal/sessionbook"
	"github.com/elysia-go/elysia/mcpgateway"
)

// evictTimeout bounds ending an evicted session, chiefly removing its
// record from the SessionStore.
const evictTimeout = 10 * time.Second

// logKeyCause names the cap an evicted session made room under:
// sessionbook.CauseUser or sessionbook.CauseService.
const logKeyCause = "cause"

// EndEvicted ends everywhere a session the book forgot to make room for
// another (sessionbook.Book.Add), as its client's DELETE would: its calls are
// cancelled upstream, its GET stream closes, its resource subscriptions
// end at their servers, mcp-go drops it at once rather than after
// SessionIdleTTL, and with a SessionStore its record goes and the other
// replicas are told. It returns at once, so the initialize that made room
// waits on none of it: the ending runs on a goroutine of Config.Go,
// which the endpoint's Close waits for, and ev.Done is called when it is
// over.
//
// A legacy SSE session is dropped the same way, but mcp-go's SSE server
// keeps its stream open until the client leaves; the client's next message
// gets 404.
func (h *Hub) EndEvicted(ev sessionbook.Eviction) {
	started := h.Go(func() {
		defer ev.Done()
		ctx, cancel := context.WithTimeout(mcpgateway.WithUser(context.Background(), ev.User), evictTimeout)
		defer cancel()
		h.Logger.InfoContext(ctx, "MCP session ended to make room for a new one", logKeyUser, ev.User, logKeyCause, ev.Cause)
		if strings.HasPrefix(ev.ID, sessionbook.SSEPrefix) {
			h.srv.UnregisterSession(ctx, ev.ID) // its subscriptions end (sessionEnded)
			h.CancelSession(ev.ID)
		} else {
			h.endHere(ctx, ev.ID)
		}
		if h.Sessions == nil {
			return
		}
		if err := h.endShared(ctx, ev.ID, ev.User); err != nil {
			h.Logger.WarnContext(ctx, "removing an evicted MCP session's record: the other replicas serve it until it is idle",
				logKeyUser, ev.User, logKeyErr, err)
		}
	})
	if !started { // the endpoint is closing: its sessions all end with it
		ev.Done()
	}
}
