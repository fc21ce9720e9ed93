package mcpendpoint

import (
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// sentURLs maps the url-mode questions one call put to its client, by the
// asking server and its elicitationId, to the elicitationId the client
// got. It is safe for concurrent use.
type sentURLs struct {
	mu  sync.Mutex
	ids map[[2]string]string
}

// add records that server's question id went to the client as ours. A
// question the server gave no id is never completed.
func (s *sentURLs) add(server, id, ours string) {
	if id == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids == nil {
		s.ids = map[[2]string]string{}
	}
	s.ids[[2]string{server, id}] = ours
}

// take forgets server's question id and returns the id the client got, or
// "" when it got none.
func (s *sentURLs) take(server, id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ours := s.ids[[2]string{server, id}]
	delete(s.ids, [2]string{server, id})
	return ours
}

// ElicitationComplete tells the client that server's url-mode question id
// is complete (notifications/elicitation/complete), under the id the
// client got with the question; the call may have ended, its session not.
func (e clientEmitter) ElicitationComplete(server, id string) {
	ours := e.urls.take(server, id)
	sid := SessionID(e.call)
	if ours == "" || sid == "" {
		return
	}
	_ = e.srv.SendNotificationToSpecificClient(sid, string(mcp.MethodNotificationElicitationComplete),
		map[string]any{"elicitationId": ours}) // a gone session misses it
}
