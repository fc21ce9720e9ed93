package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/elysia-go/elysia/web/internal/webtest"
)

// mcpSpy is the MCP endpoint web hands authenticated requests to; it
// records for whom.
type mcpSpy struct {
	mu    sync.Mutex
	users []string
}

func (m *mcpSpy) ServeMCP(w http.ResponseWriter, r *http.Request, user string) {
	m.mu.Lock()
	m.users = append(m.users, user)
	m.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

func (m *mcpSpy) last() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.users) == 0 {
		return ""
	}
	return m.users[len(m.users)-1]
}

func mcpRequest(t *testing.T, h *harness, remote string, headers map[string]string) int {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Host, req.RemoteAddr = webtest.Host, remote
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(rec, req)
	return rec.Code
}

// TestMCPRouteWho: with keys the key's user is the MCP user (an admin key
// may name one); without keys only loopback peers are served, as the user
// X-Elysia-User names or MCPUser.
func TestMCPRouteWho(t *testing.T) {
	spy := &mcpSpy{}
	h := newHarness(t, &Options{MCP: spy, Keys: map[string]string{"ka": "alice", "kadmin": AdminUser}})
	if code := mcpRequest(t, h, "127.0.0.1:5000", nil); code != http.StatusUnauthorized {
		t.Errorf("no key: %d, want 401", code)
	}
	if code := mcpRequest(t, h, "192.0.2.1:5000", map[string]string{"Authorization": "Bearer ka", "X-Elysia-User": "bob"}); code != http.StatusAccepted || spy.last() != "alice" {
		t.Errorf("alice's key naming bob: %d as %q, want alice", code, spy.last())
	}
	if code := mcpRequest(t, h, "192.0.2.1:5000", map[string]string{"Authorization": "Bearer kadmin", "X-Elysia-User": "bob"}); code != http.StatusAccepted || spy.last() != "bob" {
		t.Errorf("admin key naming bob: %d as %q", code, spy.last())
	}

	spy = &mcpSpy{}
	h = newHarness(t, &Options{MCP: spy, MCPUser: "carol"})
	if code := mcpRequest(t, h, "192.0.2.1:5000", nil); code != http.StatusForbidden {
		t.Errorf("keyless from another machine: %d, want 403", code)
	}
	if code := mcpRequest(t, h, "127.0.0.1:5000", nil); code != http.StatusAccepted || spy.last() != "carol" {
		t.Errorf("keyless loopback: %d as %q, want carol", code, spy.last())
	}
	if code := mcpRequest(t, h, "[::1]:5000", map[string]string{"X-Elysia-User": "dave"}); code != http.StatusAccepted || spy.last() != "dave" {
		t.Errorf("keyless loopback naming dave: %d as %q", code, spy.last())
	}
	if code := mcpRequest(t, h, "127.0.0.1:5000", map[string]string{"X-Elysia-User": "../x"}); code != http.StatusBadRequest {
		t.Errorf("a bad user name: %d, want 400", code)
	}
}
