package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/internal/testenv"
)

// mcpClient connects mcp-go's Streamable HTTP client to url with key (""
// for none) and initializes it.
func mcpClient(t *testing.T, url, key string, opts ...mcptransport.StreamableHTTPCOption) *mcpclient.Client {
	t.Helper()
	if key != "" {
		opts = append(opts, mcptransport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + key}))
	}
	c, err := mcpclient.NewStreamableHttpClient(url+"/mcp", opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := c.Start(t.Context()); err != nil { // the GET stream lives as long as Start's ctx
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	req.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	res, err := c.Initialize(ctx, req)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if res.ProtocolVersion != mcp.ProtocolVersion20251125 {
		t.Fatalf("protocol %q, want 2025-11-25", res.ProtocolVersion)
	}
	return c
}

func toolNames(t *testing.T, c *mcpclient.Client) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func callText(t *testing.T, c *mcpclient.Client, name string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	res, err := c.CallTool(ctx, req)
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

func todoServer(t *testing.T, name, extra string) string {
	t.Helper()
	return fmt.Sprintf(`%q: {"type": "stdio", "command": %q, "env": {"TODO_DB": "./data/%s.db"}, "cwd": "."%s}`, name, testenv.TodoMCP(t), name, extra)
}

func TestMCPEndpointListsAndCallsEveryServer(t *testing.T) {
	long := strings.Repeat("l", 60)
	cfg := `{"expose": {"mode": "tools"}, "servers": {` + todoServer(t, "a", "") + `,` + todoServer(t, "b", "") + `,` +
		todoServer(t, "c", `, "prefix": ""`) + `,` + todoServer(t, "d", `, "prefix": ""`) + `,` + todoServer(t, long, "") + `}}`
	s := startService(t, serveOptions{Config: cfg})
	c := mcpClient(t, s.URL, "")
	names := toolNames(t, c)
	has := map[string]bool{}
	for _, n := range names {
		has[n] = true
		if len(n) > 64 || strings.Trim(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
			t.Errorf("tool name %q: want at most 64 characters from [A-Za-z0-9_-]", n)
		}
	}
	for _, want := range []string{"a__create_todo", "b__create_todo", "create_todo", "create_todo_2", "ask"} {
		if !has[want] {
			t.Errorf("no tool %q in %v", want, names)
		}
	}
	code, servers := do(t, http.MethodGet, s.URL+"/api/servers", "", nil)
	if code != http.StatusOK || !strings.Contains(jsonOf(servers), `"renamed":{"create_todo":"create_todo_2"`) {
		t.Errorf("GET /api/servers = %d, want d's create_todo renamed create_todo_2:\n%s", code, jsonOf(servers))
	}
	cut := 0
	for _, n := range names {
		if strings.HasPrefix(n, "lllll") && len(n) == 64 {
			cut++
		}
	}
	if cut != 5 {
		t.Errorf("%d cut names of the 60-character server, want 5: %v", cut, names)
	}
	if text, isErr := callText(t, c, "b__create_todo", map[string]any{"title": "from b"}); isErr {
		t.Fatalf("b__create_todo: %s", text)
	}
	text, _ := callText(t, c, "b__list_todos", nil)
	if !strings.Contains(text, "from b") {
		t.Errorf("b__list_todos = %s, want the todo made through b", text)
	}
	if text, _ := callText(t, c, "a__list_todos", nil); strings.Contains(text, "from b") {
		t.Errorf("a__list_todos = %s: a shares b's database?", text)
	}
	// Validation runs before anything is sent; unknown names say what is close.
	if text, isErr := callText(t, c, "a__create_todo", map[string]any{"title": 7}); !isErr || !strings.Contains(text, "title") {
		t.Errorf("bad arguments: isError %v, %s", isErr, text)
	}
	if text, isErr := callText(t, c, "a__create_tod", nil); !isErr || !strings.Contains(text, "a__create_todo") {
		t.Errorf("unknown tool: isError %v, %s", isErr, text)
	}
}

// rawPost posts body to /mcp with headers and returns the status and body.
func rawPost(t *testing.T, url string, body []byte, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/mcp", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

func TestMCPEndpointBadInputAndUsers(t *testing.T) {
	s := startService(t, serveOptions{Env: []string{"ELYSIA_API_KEYS=ka:alice,kb:bob"}})
	list := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if code, body := rawPost(t, s.URL, list, nil); code != http.StatusUnauthorized {
		t.Errorf("no key: %d %s, want 401", code, body)
	}
	alice := mcpClient(t, s.URL, "ka")
	sid := alice.GetTransport().(*mcptransport.StreamableHTTP).GetSessionId()
	hdr := func(key, session string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + key, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
	}
	if code, body := rawPost(t, s.URL, list, hdr("ka", sid)); code != http.StatusOK || !strings.Contains(body, "todo__create_todo") {
		t.Errorf("alice's session with alice's key: %d %s", code, body)
	}
	if code, body := rawPost(t, s.URL, list, hdr("kb", sid)); code != http.StatusNotFound {
		t.Errorf("alice's session with bob's key: %d %s, want 404", code, body)
	}
	if code := rawGet(t, s.URL, hdr("kb", sid)); code != http.StatusNotFound {
		t.Errorf("GET stream of alice's session with bob's key: %d, want 404", code)
	}
	if code, body := rawPost(t, s.URL, list, hdr("ka", "mcp-session-0000")); code != http.StatusNotFound {
		t.Errorf("unknown session: %d %s, want 404", code, body)
	}
	if code, body := rawPost(t, s.URL, []byte(`{"jsonrpc":`), hdr("ka", sid)); !strings.Contains(body, "-32700") {
		t.Errorf("garbage: %d %s, want a JSON-RPC parse error", code, body)
	}
	big := append([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"`), bytes.Repeat([]byte("x"), 1<<20)...)
	big = append(big, `"}}`...)
	if code, body := rawPost(t, s.URL, big, hdr("ka", sid)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("1 MiB+ body: %d %.200s, want 413", code, body)
	}
	bob := mcpClient(t, s.URL, "kb")
	if text, isErr := callText(t, bob, "todo__list_todos", nil); isErr {
		t.Errorf("bob's call: %s", text)
	}
	bobSession := bob.GetTransport().(*mcptransport.StreamableHTTP).GetSessionId()
	logged := func() bool { // the service's output reaches the test through a pipe: poll
		for _, line := range strings.Split(s.Output(), "\n") {
			if strings.Contains(line, `"msg":"tool call"`) && strings.Contains(line, `"user":"bob"`) &&
				strings.Contains(line, `"mcp_session":"`+bobSession+`"`) && strings.Contains(line, `"tool":"list_todos"`) {
				return true
			}
		}
		return false
	}
	testenv.WaitFor(t, 10*time.Second, "a tool call log line with bob's user and MCP session "+bobSession, logged)
}

// rawGet opens the GET stream of /mcp and returns its status.
func rawGet(t *testing.T, url string, hdr map[string]string) int {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close() // the status is all this wants
	return resp.StatusCode
}

// slowServer is an MCP server in this process, over HTTP: "slow" reports
// progress and then waits for its cancellation, which it records; n more
// tools t0000... make a big catalog.
func slowServer(t *testing.T, n int) (url string, cancelled <-chan struct{}) {
	t.Helper()
	s := mcpserver.NewMCPServer("slow", "1")
	gone := make(chan struct{}, 1)
	s.AddTool(mcp.NewTool("slow", mcp.WithDescription("waits")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		srv := mcpserver.ServerFromContext(ctx)
		token := req.Params.Meta.ProgressToken
		for i := 1; i <= 3; i++ {
			_ = srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{"progressToken": token, "progress": i, "total": 10})
		}
		select {
		case <-ctx.Done():
			gone <- struct{}{}
			return nil, ctx.Err()
		case <-time.After(30 * time.Second):
			return mcp.NewToolResultText("done"), nil
		}
	})
	var tools []mcpserver.ServerTool
	for i := range n {
		tools = append(tools, mcpserver.ServerTool{Tool: mcp.NewTool(fmt.Sprintf("t%04d", i), mcp.WithDescription(fmt.Sprintf("tool number %d of the catalog", i)),
			mcp.WithString("v")), Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ran " + req.Params.Name), nil
		}})
	}
	s.AddTools(tools...)
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(s, mcpserver.WithDisableLocalhostProtection(true)))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp", gone
}

func TestMCPEndpointProgressAndCancel(t *testing.T) {
	url, cancelled := slowServer(t, 0)
	s := startService(t, serveOptions{Config: fmt.Sprintf(`{"servers": {"slow": {"type": "http", "url": %q}}}`, url),
		Env: []string{"ELYSIA_MCP_ENDPOINT_RESUME_WAIT=1s"}})
	c := mcpClient(t, s.URL, "")
	var mu sync.Mutex
	var progress []float64
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			mu.Lock()
			p, _ := n.Params.AdditionalFields["progress"].(float64)
			progress = append(progress, p)
			mu.Unlock()
		}
	})
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "slow__slow"
		req.Params.Meta = &mcp.Meta{ProgressToken: "tok"}
		_, err := c.CallTool(ctx, req)
		errc <- err
	}()
	testenv.WaitFor(t, 20*time.Second, "progress through /mcp", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(progress) > 0
	})
	// mcp-go's HTTP client sends no notifications/cancelled: it drops the
	// connection, and the endpoint cancels the call when nobody has
	// resumed its stream within ELYSIA_MCP_ENDPOINT_RESUME_WAIT.
	cancel()
	select {
	case <-cancelled:
	case <-time.After(20 * time.Second):
		t.Fatal("the upstream call was not cancelled")
	}
	if err := <-errc; err != nil {
		t.Logf("the client's call ended with %v, as a cancelled call does", err)
	}
}

func TestMCPEndpointAutoSwitchesToSearch(t *testing.T) {
	url, _ := slowServer(t, 5000)
	s := startService(t, serveOptions{Config: fmt.Sprintf(`{"servers": {"big": {"type": "http", "url": %q}}}`, url)})
	c := mcpClient(t, s.URL, "")
	names := toolNames(t, c)
	if strings.Join(names, ",") != "search_tools,call_tool,ask" {
		t.Fatalf("tools %v, want search_tools, call_tool and ask", names)
	}
	text, isErr := callText(t, c, "search_tools", map[string]any{"query": "number 4321"})
	if isErr || !strings.Contains(text, "big__t4321") {
		t.Fatalf("search_tools: %s", text)
	}
	if text, isErr := callText(t, c, "call_tool", map[string]any{"name": "big__t4321", "arguments": map[string]any{"v": "x"}}); isErr || text != "ran t4321" {
		t.Errorf("call_tool: %v %s", isErr, text)
	}
	if text, isErr := callText(t, c, "call_tool", map[string]any{"name": "big__t43210"}); !isErr || !strings.Contains(text, "big__t4321") {
		t.Errorf("call_tool of an unknown name: %v %s", isErr, text)
	}
}

func TestMCPEndpointListChangedAfterConfigEdit(t *testing.T) {
	s := startService(t, serveOptions{})
	// The endpoint serves 2025-11-25, whose list_changed comes on the GET
	// stream that this (deprecated for 2026-07-28) option opens.
	//lint:ignore SA1019 the GET stream of the protocol the endpoint serves
	c := mcpClient(t, s.URL, "", mcptransport.WithContinuousListening()) //nolint:staticcheck // see above
	changed := make(chan struct{}, 8)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			changed <- struct{}{}
		}
	})
	_ = toolNames(t, c)
	for len(changed) > 0 { // the first listing itself may announce a change
		<-changed
	}
	cfg := `{"servers": {` + todoServer(t, "todo", "") + `,` + todoServer(t, "more", "") + `}}`
	if err := os.WriteFile(s.Config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/tools/list_changed after the mcp.json edit")
	}
	testenv.WaitFor(t, 10*time.Second, "the new server's tools", func() bool {
		return strings.Contains(strings.Join(toolNames(t, c), ","), "more__create_todo")
	})
}

func TestMCPServeStdio(t *testing.T) {
	bin := elysiaBin(t)
	dir := t.TempDir()
	cfg := dir + "/mcp.json"
	if err := os.WriteFile(cfg, []byte(defaultConfig(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(cleanEnv(), "ELYSIA_USER=carol")
	c, err := mcpclient.NewStdioMCPClientWithOptions(bin, env, []string{"mcp", "serve", "--config", cfg, "--db", "-"},
		mcptransport.WithCommandFunc(func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Env, cmd.Dir = env, dir
			return cmd, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	res, err := c.Initialize(ctx, req)
	if err != nil {
		t.Fatalf("initialize over stdio: %v", err)
	}
	if res.ServerInfo.Version != version {
		t.Errorf("serverInfo.version = %q, want elysia's, %q", res.ServerInfo.Version, version)
	}
	if names := strings.Join(toolNames(t, c), ","); !strings.Contains(names, "todo__create_todo") {
		t.Fatalf("tools over stdio: %s", names)
	}
	if text, isErr := callText(t, c, "todo__create_todo", map[string]any{"title": "over stdio"}); isErr {
		t.Fatalf("call over stdio: %s", text)
	}
	if text, _ := callText(t, c, "todo__list_todos", nil); !strings.Contains(text, "over stdio") {
		t.Errorf("list over stdio: %s", text)
	}
}

// jsonOf is v as JSON, for messages.
func jsonOf(v any) string { b, _ := json.Marshal(v); return string(b) }
