package adapter

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/mcpgateway"
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
	a := NewServers(d)
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
