package mcpendpoint

import (
	"context"
	"fmt"
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

	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/tools"
)

// source is a Source over fixed gateways, standing in for discovery.
type source struct {
	mu        sync.Mutex
	gws       []*mcpgateway.Gateway
	expose    mcpgateway.Expose
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

func (s *source) Expose() mcpgateway.Expose {
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
	g := mcpgateway.New(mcpgateway.ServerConfig{Name: name, Transport: mcpgateway.TransportHTTP, URL: url, Enabled: true,
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

func names(t *testing.T, c *mcpclient.Client) []string {
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
	src := &source{expose: mcpgateway.DefaultExpose(), gws: []*mcpgateway.Gateway{
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
	got := strings.Join(names(t, c), ",")
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
	src := &source{expose: mcpgateway.DefaultExpose(), gws: []*mcpgateway.Gateway{gateway(t, "good", upstream(t, "echo"))}}
	base := serve(t, New(src, nil))
	c, err := mcpclient.NewSSEMCPClient(base + "/sse")
	if err != nil {
		t.Fatal(err)
	}
	connect(t, c)
	if got := strings.Join(names(t, c), ","); got != "good__echo" {
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
}

// TestGatewaysMode lists the gateway tools as the tree has them and runs
// one.
func TestGatewaysMode(t *testing.T) {
	ex := mcpgateway.DefaultExpose()
	ex.Mode = mcpgateway.ExposeGateways
	src := &source{expose: ex, gws: []*mcpgateway.Gateway{gateway(t, "good", upstream(t, "echo"))}}
	c, err := mcpclient.NewStreamableHttpClient(serve(t, New(src, nil)) + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	connect(t, c)
	if got := strings.Join(names(t, c), ","); got != "mcp_good" {
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
	emit.Emit(ctx, tools.NewStatus("thinking"))
	return Answer{ConversationID: "c-" + user, Text: fmt.Sprintf("%s asked %q", user, q), Objects: []map[string]any{{"n": 1}}}, nil
}

// TestAskTool: ask is listed when the config allows it and answers for the
// session's user, with structured content.
func TestAskTool(t *testing.T) {
	src := &source{expose: mcpgateway.DefaultExpose()}
	c, err := mcpclient.NewStreamableHttpClient(serve(t, New(src, &Options{Agent: agent{}})) + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	connect(t, c)
	if got := strings.Join(names(t, c), ","); got != "ask" {
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
	src.mu.Lock()
	src.expose.Agent = false
	src.mu.Unlock()
	if got := names(t, c); len(got) != 0 {
		t.Errorf("tools with agent off: %v", got)
	}
}

// notifier is an mcpgateway.Observer that tells src's listeners when a
// server's tools change, as discovery does.
type notifier struct{ src *source }

func (n notifier) ObserveCall(string, string, string, time.Duration) {}
func (n notifier) ObserveCircuit(string, string)                     {}
func (n notifier) ObserveTools(string) {
	n.src.mu.Lock()
	defer n.src.mu.Unlock()
	for c := range n.src.listeners {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// TestUpstreamToolChangeReachesClients: a server that adds a tool (and
// says so with list_changed) makes the endpoint send list_changed to an
// open session, whose next list has the tool.
func TestUpstreamToolChangeReachesClients(t *testing.T) {
	up := mcpserver.NewMCPServer("up", "1", mcpserver.WithToolCapabilities(true))
	up.AddTool(mcp.NewTool("first"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("1"), nil
	})
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(up, mcpserver.WithDisableLocalhostProtection(true)))
	t.Cleanup(hs.Close)
	src := &source{expose: mcpgateway.DefaultExpose()}
	g := mcpgateway.New(mcpgateway.ServerConfig{Name: "up", Transport: mcpgateway.TransportHTTP, URL: hs.URL + "/mcp", Enabled: true,
		ConnectTimeout: 5 * time.Second, CallTimeout: 5 * time.Second}, &mcpgateway.Options{Observer: notifier{src}})
	t.Cleanup(func() { _ = g.Close() })
	src.gws = []*mcpgateway.Gateway{g}
	ep := New(src, &Options{Debounce: 50 * time.Millisecond})
	ep.changed() // the baseline, before any listing: the first one is then a change
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); ep.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	c, err := mcpclient.NewStreamableHttpClient(serve(t, ep)+"/mcp", mcptransport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 16)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			changed <- struct{}{}
		}
	})
	connect(t, c)
	if got := strings.Join(names(t, c), ","); got != "up__first,ask" && got != "up__first" {
		t.Fatalf("tools/list = %s", got)
	}
	select { // the first listing is announced; this test wants the next one
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/tools/list_changed after the first listing")
	}
	up.AddTool(mcp.NewTool("second"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("2"), nil
	})
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/tools/list_changed after the upstream added a tool")
	}
	if got := strings.Join(names(t, c), ","); !strings.Contains(got, "up__second") {
		t.Errorf("tools/list after the change = %s", got)
	}
}

// TestEndingASessionCancelsItsCalls: a client that ends its session
// (DELETE) while a call runs has the call cancelled upstream; another
// user's DELETE of that session changes nothing.
func TestEndingASessionCancelsItsCalls(t *testing.T) {
	up := mcpserver.NewMCPServer("up", "1")
	started, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	up.AddTool(mcp.NewTool("wait"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		cancelled <- struct{}{}
		return nil, ctx.Err()
	})
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(up, mcpserver.WithDisableLocalhostProtection(true)))
	t.Cleanup(hs.Close)
	g := mcpgateway.New(mcpgateway.ServerConfig{Name: "up", Transport: mcpgateway.TransportHTTP, URL: hs.URL + "/mcp", Enabled: true,
		ConnectTimeout: 5 * time.Second, CallTimeout: time.Minute}, nil) // no timeout ends the call first
	t.Cleanup(func() { _ = g.Close() })
	src := &source{expose: mcpgateway.DefaultExpose(), gws: []*mcpgateway.Gateway{g}}
	base := serve(t, New(src, nil))
	c, err := mcpclient.NewStreamableHttpClient(base + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	connect(t, c)
	sid := c.GetTransport().(*mcptransport.StreamableHTTP).GetSessionId()
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "up__wait"
		_, _ = c.CallTool(t.Context(), req) // ends with the session
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the call never reached the server")
	}
	del := func(user string) int {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodDelete, base+"/mcp", nil)
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", mcp.ProtocolVersion20251125)
		req.Header.Set("X-User", user)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if code := del("bob"); code != http.StatusNotFound {
		t.Errorf("bob's DELETE of alice's session: %d, want 404", code)
	}
	select {
	case <-cancelled:
		t.Fatal("bob's DELETE cancelled alice's call")
	default:
	}
	if code := del("alice"); code != http.StatusOK {
		t.Errorf("alice's DELETE: %d", code)
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the call was not cancelled upstream when its session ended")
	}
}
