package mcpendpoint

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

// source is a Source over fixed gateways, standing in for discovery.
type source struct {
	mu        sync.Mutex
	gws       []*mcpgateway.Gateway
	expose    mcpconfig.Expose
	listeners map[chan<- struct{}]bool
}

func (s *source) Upstreams() []Upstream {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Upstream, len(s.gws))
	for i, g := range s.gws {
		out[i] = g
	}
	return out
}

func (s *source) Expose() mcpconfig.Expose {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.expose
}

func (s *source) Notify(c chan<- struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listeners == nil {
		s.listeners = map[chan<- struct{}]bool{}
	}
	s.listeners[c] = true
}

func (s *source) Stop(c chan<- struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.listeners, c)
}

// upstream is an MCP server in this process over Streamable HTTP with an
// echo tool named tool.
func upstream(t *testing.T, tool string) string {
	t.Helper()
	s := mcpserver.NewMCPServer("up", "1")
	s.AddTool(mcp.NewTool(tool, mcp.WithString("message", mcp.Required()), mcp.WithReadOnlyHintAnnotation(true)),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("echo: " + req.GetString("message", "")), nil
		})
	return serveUpstream(t, s)
}

// serveUpstream serves s over Streamable HTTP on loopback until the test
// ends and returns its MCP URL.
func serveUpstream(t *testing.T, s *mcpserver.MCPServer) string {
	t.Helper()
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(s, mcpserver.WithDisableLocalhostProtection(true)))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// silent is an HTTP server that accepts requests and never answers them
// until the test ends.
func silent(t *testing.T) string {
	t.Helper()
	stop := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(stop); hs.Close() })
	return hs.URL + "/mcp"
}

// closedURL is an address nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // free the port: connecting is refused
	return "http://" + addr + "/mcp"
}

func gateway(t *testing.T, name, url string) *mcpgateway.Gateway {
	t.Helper()
	g := mcpgateway.New(mcpconfig.ServerConfig{Name: name, Transport: mcpconfig.TransportHTTP, URL: url, Enabled: true,
		ConnectTimeout: 5 * time.Second, CallTimeout: 5 * time.Second}, nil)
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// httpHandler serves ep; the user is the X-User header, else alice.
func httpHandler(ep *Endpoint) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user := r.Header.Get("X-User")
		if user == "" {
			user = "alice"
		}
		ep.ServeMCP(w, r, user)
	})
}

// serve runs ep over HTTP (httpHandler).
func serve(t *testing.T, ep *Endpoint) string {
	t.Helper()
	hs := httptest.NewServer(httpHandler(ep))
	t.Cleanup(hs.Close)
	t.Cleanup(func() { _ = ep.Close(context.Background()) })
	return hs.URL
}

func connect(t *testing.T, c *mcpclient.Client) {
	t.Helper()
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("initialize: %v", err)
	}
}

// listedNames returns the names of the tools c lists.
func listedNames(t *testing.T, c *mcpclient.Client) []string {
	t.Helper()
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	return out
}

func call(t *testing.T, c *mcpclient.Client, name string, args map[string]any) (string, bool) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	var b strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// TestListSurvivesDownAndSlowServers: a server nothing listens on and one
// that never answers are left out of tools/list, within the list timeout,
// and never block the calls of the others.
func TestListSurvivesDownAndSlowServers(t *testing.T) {
	src := &source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{
		gateway(t, "good", upstream(t, "echo")),
		gateway(t, "down", closedURL(t)),
		gateway(t, "slow", silent(t)),
	}}
	ep := New(src, &Options{ListTimeout: 500 * time.Millisecond})
	c, err := mcpclient.NewStreamableHttpClient(serve(t, ep) + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	connect(t, c)
	start := time.Now()
	got := strings.Join(listedNames(t, c), ",")
	if got != "good__echo" {
		t.Errorf("tools/list = %s, want good__echo alone", got)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("tools/list took %v with a silent server: want about the list timeout", d)
	}
	if text, isErr := call(t, c, "good__echo", map[string]any{"message": "hi"}); isErr || text != "echo: hi" {
		t.Errorf("good__echo = %v %q", isErr, text)
	}
	if text, isErr := call(t, c, "good__echo", map[string]any{}); !isErr || !strings.Contains(text, "message") {
		t.Errorf("missing argument: isError %v, %q; want the schema's complaint", isErr, text)
	}
}

// TestSSETransport: an old client on the legacy SSE transport lists and
// calls; another user cannot post to its session.
func TestSSETransport(t *testing.T) {
	src := &source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{gateway(t, "good", upstream(t, "echo"))}}
	ep := New(src, nil)
	base := serve(t, ep)
	c, err := mcpclient.NewSSEMCPClient(base + "/sse")
	if err != nil {
		t.Fatal(err)
	}
	connect(t, c)
	if got := strings.Join(listedNames(t, c), ","); got != "good__echo" {
		t.Errorf("tools/list over SSE = %s", got)
	}
	if text, isErr := call(t, c, "good__echo", map[string]any{"message": "old"}); isErr || text != "echo: old" {
		t.Errorf("call over SSE = %v %q", isErr, text)
	}
	sid := c.GetTransport().(*mcptransport.SSE).GetEndpoint().Query().Get("sessionId")
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/message?sessionId="+sid,
		strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-User", "bob")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob posting to alice's SSE session: %d, want 404", resp.StatusCode)
	}
	_ = c.Close()
	// Its stream has closed: the session goes.
	testenv.WaitFor(t, 10*time.Second, "alice's SSE session to end with its stream", func() bool { return !ep.sessions.OwnedBy(sid, "alice") })
}

// TestGatewaysMode lists the gateway tools as the tree has them and runs
// one.
func TestGatewaysMode(t *testing.T) {
	ex := mcpconfig.DefaultExpose()
	ex.Mode = mcpconfig.ExposeGateways
	src := &source{expose: ex, gws: []*mcpgateway.Gateway{gateway(t, "good", upstream(t, "echo"))}}
	c, err := mcpclient.NewStreamableHttpClient(serve(t, New(src, nil)) + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	connect(t, c)
	if got := strings.Join(listedNames(t, c), ","); got != "mcp_good" {
		t.Errorf("tools/list = %s, want mcp_good", got)
	}
	text, isErr := call(t, c, "mcp_good", map[string]any{"action": "execute", "tool_name": "echo", "tool_inputs": map[string]any{"message": "gw"}})
	if isErr || !strings.Contains(text, "echo: gw") {
		t.Errorf("mcp_good execute = %v %q", isErr, text)
	}
}

// agent answers ask with the question turned around, reporting a status.
type agent struct{}

func (agent) Ask(ctx context.Context, user, conv, q string, emit tools.Emitter) (Answer, error) {
	emit.Emit(tools.NewStatus("thinking"))
	return Answer{ConversationID: "c-" + user, Text: fmt.Sprintf("%s asked %q", user, q), Objects: []map[string]any{{"n": 1}}}, nil
}

// TestAskTool: ask is listed when the config allows it and answers for the
// session's user, with structured content.
func TestAskTool(t *testing.T) {
	src := &source{expose: mcpconfig.DefaultExpose()}
	c, err := mcpclient.NewStreamableHttpClient(serve(t, New(src, &Options{Agent: agent{}})) + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	connect(t, c)
	if got := strings.Join(listedNames(t, c), ","); got != "ask" {
		t.Errorf("tools/list = %s, want ask", got)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "ask", map[string]any{"question": "why"}
	res, err := c.CallTool(t.Context(), req)
	if err != nil || res.IsError {
		t.Fatalf("ask: %v %+v", err, res)
	}
	if text := res.Content[0].(mcp.TextContent).Text; text != `alice asked "why"` {
		t.Errorf("ask text %q", text)
	}
	if m, _ := res.StructuredContent.(map[string]any); m["conversation_id"] != "c-alice" {
		t.Errorf("ask structured content %v", res.StructuredContent)
	}
	for _, bad := range []string{"a/b", ".", ".."} { // no browser can open /tree/alice/..
		if text, isErr := call(t, c, "ask", map[string]any{"question": "q", "conversation_id": bad}); !isErr || !strings.Contains(text, "conversation_id") {
			t.Errorf("ask with conversation id %q: %v %q, want it refused", bad, isErr, text)
		}
	}
	src.mu.Lock()
	src.expose.Agent = false
	src.mu.Unlock()
	if got := listedNames(t, c); len(got) != 0 {
		t.Errorf("tools with agent off: %v", got)
	}
}

// TestDeleteWithoutSession: a DELETE of /mcp that names no session is the
// client's mistake, a 400, whether or not the replicas share sessions.
func TestDeleteWithoutSession(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts *Options
	}{
		{"one replica", nil},
		{"shared sessions", &Options{Sessions: &memSessions{}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url := serve(t, New(&source{expose: mcpconfig.DefaultExpose()}, tt.opts))
			resp := mcpRequest(t, t.Context(), http.MethodDelete, url, "alice", "", "")
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("DELETE /mcp without a session id: %d %s, want 400", resp.StatusCode, body)
			}
		})
	}
}
