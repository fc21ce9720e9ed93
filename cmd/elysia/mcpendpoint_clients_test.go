package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/internal/testenv"
)

// TestMCPEndpointAsk runs the decision tree (the offline planner) through
// the ask tool for the user X-Elysia-User names: the answer comes back as
// text with the conversation id, and the conversation is saved as any other.
func TestMCPEndpointAsk(t *testing.T) {
	s := startService(t, serveOptions{})
	c := mcpClient(t, s.URL, "", mcptransport.WithHTTPHeaders(map[string]string{"X-Elysia-User": "dora"}))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "ask", map[string]any{"question": "list my todos"}
	res, err := c.CallTool(ctx, req)
	if err != nil || res.IsError {
		t.Fatalf("ask: %v %s", err, jsonOf(res))
	}
	sc, _ := res.StructuredContent.(map[string]any)
	conv, _ := sc["conversation_id"].(string)
	if conv == "" {
		t.Fatalf("ask gave no conversation id: %s", jsonOf(res))
	}
	code, body := do(t, http.MethodGet, s.URL+"/conversations/dora", "", nil)
	if code != http.StatusOK || !strings.Contains(jsonOf(body), conv) {
		t.Errorf("GET /conversations/dora = %d %s, want %s among them", code, jsonOf(body), conv)
	}
}

// sdkClient runs the official MCP TypeScript SDK client (testdata/npm)
// with args and returns what it printed.
func sdkClient(t *testing.T, dir string, env []string, args ...string) map[string]any {
	t.Helper()
	testenv.Integration(t)
	sdk := testenv.RepoRoot() + "/testdata/npm/node_modules/@modelcontextprotocol/sdk"
	if _, err := os.Stat(sdk + "/package.json"); err != nil {
		testenv.Missing(t, "the MCP TypeScript SDK is not installed (run: npm ci --prefix testdata/npm)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "no node for the MCP TypeScript SDK")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	script, _ := os.Getwd()
	cmd := exec.CommandContext(ctx, node, append([]string{script + "/testdata/sdkclient.mjs"}, args...)...)
	cmd.Dir, cmd.Env = dir, append(env, "SDK_DIR="+sdk)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sdk client %v: %v\n%s", args, err, stderr.String())
	}
	var res map[string]any
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("sdk client printed %q: %v", out, err)
	}
	return res
}

func checkSDKRun(t *testing.T, res map[string]any) {
	t.Helper()
	if !strings.Contains(jsonOf(res["tools"]), `"todo__create_todo"`) || res["createError"] != false ||
		!strings.Contains(jsonOf(res["listText"]), "from the sdk") || res["badIsError"] != true {
		t.Errorf("sdk client run: %s", jsonOf(res))
	}
}

// TestMCPEndpointTypeScriptSDK: the official TypeScript SDK client over
// /mcp (with a key) and over elysia mcp serve.
func TestMCPEndpointTypeScriptSDK(t *testing.T) {
	s := startService(t, serveOptions{Env: []string{"ELYSIA_API_KEYS=ka:alice"}})
	checkSDKRun(t, sdkClient(t, s.Dir, cleanEnv(), "http", s.URL+"/mcp", "ka"))

	dir := t.TempDir()
	if err := os.WriteFile(dir+"/mcp.json", []byte(defaultConfig(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	checkSDKRun(t, sdkClient(t, dir, append(cleanEnv(), "ELYSIA_USER=erin"),
		"stdio", elysiaBin(t), "mcp", "serve", "--config", dir+"/mcp.json", "--db", "-"))
}

// TestMCPEndpointTypeScriptSDKResumes: the TypeScript SDK client through
// a call whose stream the endpoint closes after stream_poll: the client
// resumes it with Last-Event-ID and gets every progress report, in order,
// and the answer.
func TestMCPEndpointTypeScriptSDKResumes(t *testing.T) {
	cfg := fmt.Sprintf(`{"expose": {"stream_poll": 0.3}, "servers": {"everything": {"command": "node", "args": [%q, "stdio"]}}}`, testenv.Everything(t))
	s := startService(t, serveOptions{Config: cfg})
	res := sdkClient(t, s.Dir, cleanEnv(), "long", s.URL+"/mcp")
	if jsonOf(res["progress"]) != "[1,2,3,4,5]" || !strings.Contains(jsonOf(res["text"]), "Long running operation completed") {
		t.Errorf("sdk client through a polled stream: %s, want progress [1,2,3,4,5] and the answer", jsonOf(res))
	}
	if !strings.Contains(s.Output(), "MCP call stream resumed") {
		t.Errorf("the service logged no resume of the polled stream:\n%s", s.Output())
	}
}

// TestMCPEndpointSignInLink: a server the key's user has not signed in to
// is listed as <server>__sign_in, and calling it (or any of its tools)
// answers isError with the link to sign in.
func TestMCPEndpointSignInLink(t *testing.T) {
	f := newOAuthFixture(t)
	s := startService(t, serveOptions{
		Config: `{"servers": {"docs": {"type": "http", "url": "` + f.rs.URL + `/mcp", "oauth": {}}}}`,
		Env:    []string{"ELYSIA_API_KEYS=ka:alice"},
	})
	c := mcpClient(t, s.URL, "ka")
	names := strings.Join(toolNames(t, c), ",")
	if !strings.Contains(names, "docs__sign_in") {
		t.Fatalf("tools %s, want docs__sign_in", names)
	}
	text, isErr := callText(t, c, "docs__sign_in", nil)
	if !isErr || !strings.Contains(text, s.URL+"/oauth/start/docs") || !strings.Contains(text, `"alice"`) {
		t.Errorf("docs__sign_in = %v %q, want isError with %s/oauth/start/docs", isErr, text, s.URL)
	}
}

// TestMCPEndpointBrowserSafety: without keys the endpoint keeps the
// service's Host and Origin rules, so a web page cannot reach it.
func TestMCPEndpointBrowserSafety(t *testing.T) {
	s := startService(t, serveOptions{})
	init := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	if code, body := rawPost(t, s.URL, init, map[string]string{"Origin": "http://evil.example"}); code != http.StatusForbidden {
		t.Errorf("another origin: %d %s, want 403", code, body)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL+"/mcp", bytes.NewReader(init))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "rebound.example"
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a rebound Host: %d, want 403", resp.StatusCode)
	}
	if code, body := rawPost(t, s.URL, init, nil); code != http.StatusOK || !strings.Contains(body, `"protocolVersion":"2025-11-25"`) {
		t.Errorf("loopback without Origin: %d %s", code, body)
	}
	sid := mcpClient(t, s.URL, "").GetTransport().(*mcptransport.StreamableHTTP).GetSessionId()
	list := []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if code, body := rawPost(t, s.URL, list, map[string]string{"MCP-Protocol-Version": "1999-01-01", "Mcp-Session-Id": sid}); code != http.StatusBadRequest {
		t.Errorf("unsupported protocol version: %d %s, want 400", code, body)
	}
}
