package web

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/elysia-go/elysia/tree"
)

// pinServers is spyServers with ServerPins: todo has create_todo waiting.
type pinServers struct {
	*spyServers
	mu      sync.Mutex
	waiting []string
	resets  int
}

func (p *pinServers) ApprovePins(_ context.Context, name string, tools []string) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if name != "todo" {
		return nil, fmt.Errorf("no MCP server %q: %w", name, tree.ErrNotFound)
	}
	if len(p.waiting) == 0 {
		return nil, fmt.Errorf("approve the tools of %q: every tool matches its pin: %w", name, ErrNothingPending)
	}
	approved := p.waiting
	p.waiting = nil
	return approved, nil
}

func (p *pinServers) ResetPins(_ context.Context, name string) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.resets++
	return 2, nil
}

// TestServerPinsRoute: POST /api/servers/:name/pins is for admin keys
// only; it approves what is waiting, then answers 409 with nothing
// pending, resets, and refuses a bad action.
func TestServerPinsRoute(t *testing.T) {
	h := newHarness(t, &Options{Keys: testKeys})
	ps := &pinServers{spyServers: h.servers, waiting: []string{"create_todo"}}
	h.srv = New(Deps{Trees: h.trees, Servers: ps, Store: h.store, Feedback: h.store, Configs: h.store}, &Options{Keys: testKeys, Assets: testAssets})
	admin := []string{"Authorization", "Bearer key-admin"}
	for _, tt := range []struct {
		body    string
		headers []string
		want    int
		has     string
	}{
		{`{"action": "approve"}`, nil, 401, "API key"},
		{`{"action": "approve"}`, []string{"Authorization", "Bearer key-alice"}, 403, "admin"},
		{`{"action": "approve", "tools": ["create_todo"]}`, admin, 200, `"approved":["create_todo"]`},
		{`{"action": "approve"}`, admin, 409, "nothing waiting for approval"},
		{`{"action": "reset"}`, admin, 200, `"removed":2`},
		{`{"action": "reset", "tools": ["x"]}`, admin, 400, "give no tools"},
		{`{"action": "trust"}`, admin, 400, `action must be`},
		{`{}`, admin, 400, "action"},
	} {
		rec := h.do(t, "POST", "/api/servers/todo/pins", tt.body, tt.headers...)
		if rec.Code != tt.want || !strings.Contains(rec.Body.String(), tt.has) {
			t.Errorf("%s: %d %s; want %d with %q", tt.body, rec.Code, rec.Body, tt.want, tt.has)
		}
	}
	if rec := h.do(t, "POST", "/api/servers/nope/pins", `{"action": "approve"}`, admin...); rec.Code != 404 {
		t.Errorf("unknown server: %d %s", rec.Code, rec.Body)
	}
}
