package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/internal/testenv"
)

// balancer is a load balancer without sticky sessions, as a client's HTTP
// transport: each request goes to the replica that to names now, but a
// JSON-RPC response (the client's answer to a server's request) to the
// one answers names, when set.
type balancer struct{ to, answers atomic.Pointer[url.URL] }

func (b *balancer) RoundTrip(r *http.Request) (*http.Response, error) {
	u := b.to.Load()
	if a := b.answers.Load(); a != nil && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		_ = r.Body.Close()
		var m struct {
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(body, &m) == nil && m.Method == "" && m.Result != nil {
			u = a
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host, r.Host = u.Scheme, u.Host, u.Host
	return http.DefaultTransport.RoundTrip(r)
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func (b *balancer) send(t *testing.T, to string) { t.Helper(); b.to.Store(mustURL(t, to)) }

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

// TestPostgresReplicasShareMCPElicitation: a client that declared
// elicitation when it initialized on replica A has its call served on
// replica B, where the server's question reaches it (B knows what the
// client declared), and its answer, which the load balancer sends to A,
// reaches the server through B.
func TestPostgresReplicasShareMCPElicitation(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	cfg := `{"expose": {"mode": "tools"}, "servers": {` + everythingServer(t, `, "elicitation_timeout": 20`) + `}}`
	a := startService(t, serveOptions{Config: cfg, Args: []string{"--db", dsn}})
	b := startService(t, serveOptions{Config: cfg, Args: []string{"--db", dsn}})

	lb := &balancer{}
	lb.send(t, a.URL)
	tr, err := mcptransport.NewStreamableHTTP(a.URL+"/mcp", mcptransport.WithHTTPBasicClient(&http.Client{Transport: lb}))
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan struct{}, 1)
	c := mcpclient.NewClient(tr, mcpclient.WithElicitationHandler(elicitFunc(
		func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
			asked <- struct{}{}
			return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
				Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"name": "Ada Lovelace"}}}, nil
		})))
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	req.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	req.Params.Capabilities = mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("initialize on A: %v", err)
	}

	lb.send(t, b.URL)
	lb.answers.Store(mustURL(t, a.URL))
	start := time.Now()
	text, isErr := callText(t, c, "everything__trigger-elicitation-request", nil)
	if isErr || !strings.Contains(text, "Ada Lovelace") {
		t.Errorf("call on B, answered through A: %q (error %v) after %v, want the client's answer", text, isErr, time.Since(start))
	}
	select {
	case <-asked:
	default:
		t.Error("the client was never asked: B did not know it declared elicitation")
	}
}
