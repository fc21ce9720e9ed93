package main

import (
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"

	"github.com/elysia-go/elysia/internal/testenv"
)

// balancer is a load balancer without sticky sessions, as a client's HTTP
// transport: each request goes to the replica that to names now.
type balancer struct{ to atomic.Pointer[url.URL] }

func (b *balancer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	u := b.to.Load()
	r.URL.Scheme, r.URL.Host, r.Host = u.Scheme, u.Host, u.Host
	return http.DefaultTransport.RoundTrip(r)
}

func (b *balancer) send(t *testing.T, to string) {
	t.Helper()
	u, err := url.Parse(to)
	if err != nil {
		t.Fatal(err)
	}
	b.to.Store(u)
}

// TestPostgresReplicasShareMCPSessions: an MCP session initialized on
// replica A is used on replica B (tools/list, tools/call) as a load
// balancer without sticky sessions sends it there; B refuses it to
// another user's key as A would; and a DELETE on B ends it on A too.
func TestPostgresReplicasShareMCPSessions(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	env := []string{"ELYSIA_API_KEYS=ka:alice,kb:bob"}
	a := startService(t, serveOptions{Env: env, Args: []string{"--db", dsn}})
	b := startService(t, serveOptions{Env: env, Args: []string{"--db", dsn}})

	lb := &balancer{}
	lb.send(t, a.URL)
	alice := mcpClient(t, a.URL, "ka", mcptransport.WithHTTPBasicClient(&http.Client{Transport: lb}))
	sid := alice.GetTransport().(*mcptransport.StreamableHTTP).GetSessionId()

	lb.send(t, b.URL)
	if names := toolNames(t, alice); !strings.Contains(strings.Join(names, " "), "todo__create_todo") {
		t.Errorf("tools/list on B of A's session: %v", names)
	}
	if text, isErr := callText(t, alice, "todo__create_todo", map[string]any{"title": "from B"}); isErr {
		t.Errorf("tools/call on B of A's session: %s", text)
	}
	if got := alice.GetTransport().(*mcptransport.StreamableHTTP).GetSessionId(); got != sid {
		t.Errorf("session id moved from %q to %q", sid, got)
	}

	list := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	hdr := func(key string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + key, "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
	}
	if code, body := rawPost(t, b.URL, list, hdr("kb")); code != http.StatusNotFound {
		t.Errorf("alice's session with bob's key on B: %d %s, want 404", code, body)
	}
	if code := rawGet(t, b.URL, hdr("kb")); code != http.StatusNotFound {
		t.Errorf("GET stream of alice's session with bob's key on B: %d, want 404", code)
	}
	if code, _, body := rawDo(t, http.MethodDelete, b.URL+"/mcp", "", nil, hdr("kb")); code != http.StatusNotFound {
		t.Errorf("DELETE of alice's session with bob's key on B: %d %s, want 404", code, body)
	}
	if code, body := rawPost(t, a.URL, list, hdr("ka")); code != http.StatusOK {
		t.Fatalf("alice's session on A after bob's attempts on B: %d %s", code, body)
	}

	if code, _, body := rawDo(t, http.MethodDelete, b.URL+"/mcp", "", nil, hdr("ka")); code != http.StatusOK {
		t.Fatalf("DELETE of alice's session on B: %d %s", code, body)
	}
	testenv.WaitFor(t, 10*time.Second, "A to end the session deleted on B", func() bool {
		code, _ := rawPost(t, a.URL, list, hdr("ka"))
		return code == http.StatusNotFound
	})
	if code, body := rawPost(t, b.URL, list, hdr("ka")); code != http.StatusNotFound {
		t.Errorf("alice's deleted session on B: %d %s, want 404", code, body)
	}
}
