package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/internal/testenv"
)

// TestPostgresReplicasShareSSESessions: a legacy SSE client behind a
// round-robin load balancer (its stream on one replica, its messages
// posted to each in turn) initializes, lists and calls; another user's
// key cannot post to its session on either replica; and the session's
// record goes when its stream ends.
func TestPostgresReplicasShareSSESessions(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	env := []string{"ELYSIA_API_KEYS=ka:alice,kb:bob"}
	a := startService(t, serveOptions{Env: env, Args: []string{"--db", dsn}})
	b := startService(t, serveOptions{Env: env, Args: []string{"--db", dsn}})

	lb := testenv.RoundRobin(t, a.URL, b.URL)
	c, err := mcpclient.NewSSEMCPClient(lb+"/sse", mcpclient.WithHeaders(map[string]string{"Authorization": "Bearer ka"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(t.Context()); err != nil { // the stream lives as long as Start's ctx
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.ProtocolVersion20241105
	req.Params.ClientInfo = mcp.Implementation{Name: "old", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("initialize over SSE across replicas: %v", err)
	}
	for i := range 3 { // each replica serves some of them
		if names := toolNames(t, c); !strings.Contains(strings.Join(names, " "), "todo__create_todo") {
			t.Errorf("tools/list %d over SSE across replicas: %v", i, names)
		}
		if text, isErr := callText(t, c, "todo__create_todo", map[string]any{"title": "round robin"}); isErr {
			t.Errorf("tools/call %d over SSE across replicas: %s", i, text)
		}
	}

	path := c.GetTransport().(*mcptransport.SSE).GetEndpoint().RequestURI()
	list := `{"jsonrpc":"2.0","id":99,"method":"tools/list"}`
	for _, base := range []string{a.URL, b.URL} {
		if code, _, body := rawDo(t, http.MethodPost, base+path, "kb", []byte(list), nil); code != http.StatusNotFound {
			t.Errorf("alice's SSE session with bob's key on %s: %d %s, want 404", base, code, body)
		}
	}
	_ = c.Close()
	testenv.WaitFor(t, 10*time.Second, "the SSE session to end on both replicas", func() bool {
		for _, base := range []string{a.URL, b.URL} {
			if code, _, _ := rawDo(t, http.MethodPost, base+path, "ka", []byte(list), nil); code != http.StatusNotFound {
				return false
			}
		}
		return true
	})
}
