package adapter

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web"
)

// TestServersForNamesMissingSecrets checks that GET /api/servers tells a
// user which of their own secrets a server still needs, as `elysia mcp
// list` does (StatusFor's MissingSecrets): the state alone, needs_sign_in,
// reads as "sign in", which would not help.
func TestServersForNamesMissingSecrets(t *testing.T) {
	secrets := &UserSecrets{}
	d := newDiscovery(t, `{"servers": {"mine": {"type": "http", "url": "http://127.0.0.1:1/mcp",
		"headers": {"Authorization": "Bearer ${user:TOKEN}", "X-Team": "${user:TEAM}"}}}}`,
		&mcpgateway.Options{UserSecrets: GatewaySecrets{Secrets: secrets}})
	a := NewServers(d, nil)
	if err := secrets.PutSecret(t.Context(), "alice", "TEAM", "blue"); err != nil {
		t.Fatal(err)
	}
	st, err := a.ServersFor(t.Context(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(st.Servers[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"state":"needs_sign_in"`) || !strings.Contains(string(b), `"missing_secrets":["TOKEN"]`) {
		t.Errorf("alice's /api/servers entry = %s, want needs_sign_in with missing_secrets [\"TOKEN\"]", b)
	}
	if err := secrets.PutSecret(t.Context(), "alice", "TOKEN", "t0ken-value"); err != nil {
		t.Fatal(err)
	}
	st, err = a.ServersFor(t.Context(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(st.Servers[0])
	if strings.Contains(string(b), "missing_secrets") || strings.Contains(string(b), "t0ken") || strings.Contains(string(b), "blue") {
		t.Errorf("alice's entry once her secrets are set = %s, want no missing_secrets and no secret", b)
	}
}

// TestAPIServersNamesMissingSecrets checks the same through GET
// /api/servers with alice's key: the route asks for her view.
func TestAPIServersNamesMissingSecrets(t *testing.T) {
	d := newDiscovery(t, `{"servers": {"mine": {"type": "http", "url": "http://127.0.0.1:1/mcp",
		"headers": {"Authorization": "Bearer ${user:TOKEN}"}}}}`,
		&mcpgateway.Options{UserSecrets: GatewaySecrets{Secrets: &UserSecrets{}}})
	srv := web.New(web.Deps{Trees: tree.NewManager(nil), Servers: NewServers(d, nil)},
		&web.Options{Keys: map[string]string{"key-alice": "alice"}})
	req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/api/servers", nil)
	req.Host = "127.0.0.1"
	req.Header.Set("Authorization", "Bearer key-alice")
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"missing_secrets":["TOKEN"]`) {
		t.Errorf("GET /api/servers as alice: %d %s, want missing_secrets [\"TOKEN\"]", rec.Code, rec.Body)
	}
}

// TestStatusShowsProtocolVersion: the version a server's session
// negotiated reaches GET /api/servers, so a person can tell a 2026-07-28
// server from a 2025-11-25 one.
func TestStatusShowsProtocolVersion(t *testing.T) {
	st := Status(mcpconfig.ServerConfig{Name: "todo", Enabled: true}, mcpgateway.Status{Name: "todo", State: "connected", ProtocolVersion: "2026-07-28"})
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"protocol_version":"2026-07-28"`) {
		t.Errorf("the status on the wire = %s, want the negotiated protocol_version", b)
	}
}
