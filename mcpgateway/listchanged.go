package mcpgateway

import (
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
)

// ListsObserver is an optional interface of an Options.Observer: one that
// implements it is told when a server says its resources or prompts
// changed (notifications/resources/list_changed or
// notifications/prompts/list_changed on its current session, a user's
// too), so that the aggregate MCP endpoint can tell its clients. It is
// called on the transport's read loop: it must be quick, must not block,
// must be safe for concurrent use, and must not call back into the
// gateway.
type ListsObserver interface {
	ObserveLists(server string)
}

// ListsChanged counts the notifications/resources/list_changed and
// notifications/prompts/list_changed the server's sessions (its users'
// too) sent: a caller that lists its resources or prompts knows they may
// have changed when the count moves.
func (g *Gateway) ListsChanged() uint64 { return g.listsChanged.Load() }

// isListsChanged reports whether n says the resources or prompts changed.
func isListsChanged(n mcp.JSONRPCNotification) bool {
	return n.Method == string(mcp.MethodNotificationResourcesListChanged) ||
		n.Method == string(mcp.MethodNotificationPromptsListChanged)
}

// noteListsChanged counts a list_changed of resources or prompts from session
// s and tells the Observer. It runs on the read loop.
func (v *view) noteListsChanged(s *session.Session) {
	if !v.serves(s) {
		return
	}
	v.g.listsChanged.Add(1)
	if o, ok := v.g.opts.Observer.(ListsObserver); ok {
		o.ObserveLists(v.g.cfg.Name)
	}
}
