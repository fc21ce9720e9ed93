package stream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web"
)

// gatewayServers is the Servers of cmd over one real gateway.
type gatewayServers struct {
	fakeServers
	g *mcpgateway.Gateway
}

func (s gatewayServers) Execute(ctx context.Context, name, tool string, inputs map[string]any) (web.ExecuteResult, error) {
	return s.ExecuteWith(ctx, name, tool, inputs, nil)
}

func (s gatewayServers) ExecuteWith(ctx context.Context, _, tool string, inputs map[string]any, emit tools.Emitter) (web.ExecuteResult, error) {
	res, err := s.g.ExecuteWith(ctx, tool, inputs, emit)
	if err != nil {
		return web.ExecuteResult{}, err
	}
	return web.ExecuteResult{IsError: res.IsError, Content: res.Content, Structured: res.Structured}, nil
}

// panelServer is an MCP server whose "ask" asks the user's name and says
// hello, and whose "slow" reports progress, then waits for its call to end
// and closes cancelled.
func panelServer(cancelled chan<- struct{}) *mcpserver.MCPServer {
	srv := mcpserver.NewMCPServer("panel", "1.0.0", mcpserver.WithToolCapabilities(false), mcpserver.WithElicitation())
	srv.AddTool(mcp.NewTool("ask", mcp.WithString("greeting", mcp.Required())), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		q := mcp.ElicitationRequest{}
		q.Params.Message = "name?"
		q.Params.RequestedSchema = map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}
		res, err := srv.RequestElicitation(ctx, q)
		if err != nil {
			return nil, err
		}
		content, _ := res.Content.(map[string]any)
		return mcp.NewToolResultText(fmt.Sprintf("%s: %v %v", res.Action, req.GetString("greeting", ""), content["name"])), nil
	})
	srv.AddTool(mcp.NewTool("slow"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_ = mcpserver.ServerFromContext(ctx).SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress),
			map[string]any{"progressToken": req.Params.Meta.ProgressToken, "progress": 1, "total": 10})
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	})
	return srv
}

// panelHarness serves the API over a real gateway to panelServer.
func panelHarness(t *testing.T) (url string, cancelled <-chan struct{}) {
	t.Helper()
	c := make(chan struct{})
	mcpHTTP := httptest.NewServer(mcpserver.NewStreamableHTTPServer(panelServer(c)))
	t.Cleanup(mcpHTTP.Close)
	g := mcpgateway.New(mcpconfig.ServerConfig{Name: "todo", Transport: mcpconfig.TransportHTTP, URL: mcpHTTP.URL + "/mcp", Enabled: true}, nil)
	t.Cleanup(func() { _ = g.Close() })
	st := New(Options{Runner: newFakeRunner()})
	srv := web.New(web.Deps{Trees: tree.NewManager(nil), Servers: gatewayServers{g: g}}, &web.Options{Keys: testKeys, Routes: []web.RouteSet{st.Routes}})
	api := httptest.NewServer(srv.Handler())
	t.Cleanup(api.Close)
	return api.URL, c
}

// post sends body to path with alice's key and accept as Accept.
func post(t *testing.T, ctx context.Context, url, accept string, body any) *http.Response {
	t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer key-alice")
	req.Header.Set("Content-Type", "application/json")
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// nextEvent reads the stream's next envelope.
func nextEvent(t *testing.T, sc *bufio.Scanner) tools.Envelope {
	t.Helper()
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var env tools.Envelope
		if err := json.Unmarshal([]byte(line), &env); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		return env
	}
	t.Fatalf("the stream ended: %v", sc.Err())
	return tools.Envelope{}
}

// TestExecuteStreamsWithAnInteractiveUser: with Accept: text/event-stream
// the execute route puts the server's question to the key's user as an
// elicitation event, answered through POST /elicitations/:id, then sends
// the result; without it the JSON answer is as before (no one to ask: the
// question is declined); a call refused before any event keeps its 422.
func TestExecuteStreamsWithAnInteractiveUser(t *testing.T) {
	url, _ := panelHarness(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp := post(t, ctx, url+"/api/servers/todo/execute", "text/event-stream", map[string]any{"tool_name": "ask", "tool_inputs": map[string]any{"greeting": "hello"}})
	defer func() { _ = resp.Body.Close() }()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("execute with Accept: text/event-stream: %d %s", resp.StatusCode, ct)
	}
	sc := bufio.NewScanner(resp.Body)
	q := nextEvent(t, sc)
	var p tools.ElicitationPayload
	if err := json.Unmarshal(q.Payload, &p); q.Type != tools.EventElicitation || err != nil || p.ElicitationID == "" || q.UserID != "alice" {
		t.Fatalf("first event %s %s (user %q), want alice's elicitation", q.Type, q.Payload, q.UserID)
	}
	// Bob cannot answer alice's question.
	bobReq, _ := http.NewRequestWithContext(ctx, "POST", url+"/elicitations/"+p.ElicitationID, strings.NewReader(`{"action": "accept", "content": {"name": "Bob"}}`))
	bobReq.Header.Set("Authorization", "Bearer key-bob")
	bobReq.Header.Set("Content-Type", "application/json")
	if r, err := http.DefaultClient.Do(bobReq); err != nil || r.StatusCode != 404 {
		t.Fatalf("bob's answer to alice's question: %v %v, want 404", r.StatusCode, err)
	}
	ans := post(t, ctx, url+"/elicitations/"+p.ElicitationID, "", map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}})
	_ = ans.Body.Close()
	if ans.StatusCode != 200 {
		t.Fatalf("answer: %d", ans.StatusCode)
	}
	res := nextEvent(t, sc)
	if res.Type != tools.EventResult || !strings.Contains(string(res.Payload), "accept: hello Ada") || !strings.Contains(string(res.Payload), `"error":""`) {
		t.Fatalf("outcome %s %s, want the result echoing the answer", res.Type, res.Payload)
	}
	if done := nextEvent(t, sc); done.Type != tools.EventCompleted {
		t.Errorf("last event %s, want completed", done.Type)
	}

	// Other clients keep the JSON answer; with no one to ask, the question
	// is declined.
	plain := post(t, ctx, url+"/api/servers/todo/execute", "", map[string]any{"tool_name": "ask", "tool_inputs": map[string]any{"greeting": "hi"}})
	defer func() { _ = plain.Body.Close() }()
	var body struct {
		Error  string            `json:"error"`
		Result web.ExecuteResult `json:"result"`
	}
	if err := json.NewDecoder(plain.Body).Decode(&body); err != nil || plain.StatusCode != 200 || !strings.Contains(fmt.Sprint(body.Result.Content), "decline") {
		t.Errorf("execute without Accept: %d %+v %v, want JSON with the declined result", plain.StatusCode, body, err)
	}

	// Inputs refused before anything ran: the JSON 422, stream or not.
	bad := post(t, ctx, url+"/api/servers/todo/execute", "text/event-stream", map[string]any{"tool_name": "ask", "tool_inputs": map[string]any{}})
	defer func() { _ = bad.Body.Close() }()
	if bad.StatusCode != 422 || !strings.HasPrefix(bad.Header.Get("Content-Type"), "application/json") {
		t.Errorf("invalid inputs with Accept: text/event-stream: %d %s, want a JSON 422", bad.StatusCode, bad.Header.Get("Content-Type"))
	}
}

// TestExecuteStreamCancelledByTheClient: a streamed call shows the
// server's progress, and the client going away cancels it on the server.
func TestExecuteStreamCancelledByTheClient(t *testing.T) {
	url, cancelled := panelHarness(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	resp := post(t, ctx, url+"/api/servers/todo/execute", "text/event-stream", map[string]any{"tool_name": "slow", "tool_inputs": map[string]any{}})
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	env := nextEvent(t, sc)
	var p tools.ProgressPayload
	if err := json.Unmarshal(env.Payload, &p); env.Type != tools.EventStatus || err != nil || p.Progress != 1 || p.Total == nil || *p.Total != 10 {
		t.Fatalf("first event %s %s, want progress 1 of 10", env.Type, env.Payload)
	}
	cancel()
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's call was not cancelled 10 s after the client went away")
	}
}
