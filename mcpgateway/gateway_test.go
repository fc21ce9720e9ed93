package mcpgateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

// composedSchema uses keywords mcp-go's typed client schema drops.
const composedSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"kind":{"type":"string"},"n":{"type":"integer","maximum":5}},"allOf":[{"required":["kind"]}],"if":{"properties":{"kind":{"const":"count"}}},"then":{"required":["n"]}}`

// fakeServer is an in-process MCP server over Streamable HTTP on 127.0.0.1.
type fakeServer struct {
	srv  *mcpserver.MCPServer
	http *httptest.Server
	// held receives a value each time the hold tool starts; hold answers
	// once release is closed.
	held    chan struct{}
	release chan struct{}
	mu      sync.Mutex
	calls   int
}

func newFakeServer(t *testing.T) *fakeServer {
	t.Helper()
	f := &fakeServer{srv: mcpserver.NewMCPServer("fake", "1.0.0", mcpserver.WithToolCapabilities(true)),
		held: make(chan struct{}, 16), release: make(chan struct{})}
	f.srv.AddTool(mcp.NewToolWithRawSchema("compose", "a tool with a composed schema", json.RawMessage(composedSchema)),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			f.mu.Lock()
			f.calls++
			f.mu.Unlock()
			return mcp.NewToolResultText(fmt.Sprintf("kind=%v", req.GetArguments()["kind"])), nil
		})
	f.srv.AddTool(mcp.NewTool("echo", mcp.WithString("message", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			f.mu.Lock()
			f.calls++
			f.mu.Unlock()
			return mcp.NewToolResultText("Echo: " + req.GetString("message", "")), nil
		})
	f.srv.AddTool(mcp.NewTool("fail"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultError("it broke"), nil
	})
	f.srv.AddTool(mcp.NewTool("big"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(strings.Repeat("x", 200<<10)), nil
	})
	f.srv.AddTool(mcp.NewTool("slow"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	f.srv.AddTool(mcp.NewTool("hold"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		f.held <- struct{}{}
		select {
		case <-f.release:
			return mcp.NewToolResultText("released"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	f.http = httptest.NewServer(mcpserver.NewStreamableHTTPServer(f.srv))
	t.Cleanup(f.http.Close)
	return f
}

func (f *fakeServer) config(name string) mcpconfig.ServerConfig {
	return mcpconfig.ServerConfig{Name: name, Transport: mcpconfig.TransportHTTP, URL: f.http.URL + "/mcp", Enabled: true,
		ConnectTimeout: 5 * time.Second, CallTimeout: 5 * time.Second}
}

func newGateway(t *testing.T, cfg mcpconfig.ServerConfig, opts *Options) *Gateway {
	t.Helper()
	g := New(cfg, opts)
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return g
}

func TestGatewayDescribesItself(t *testing.T) {
	t.Parallel()
	// A command that is there: one that is not is failed from the start.
	g := newGateway(t, mcpconfig.ServerConfig{Name: "api-ai", Transport: mcpconfig.TransportStdio, Command: testenv.TodoMCP(t), Description: "Todo things", Enabled: true}, nil)
	if got, want := g.Name(), "mcp_api_ai"; got != want {
		t.Errorf("Name = %q, want %q", got, want)
	}
	if got, want := g.Description(), "MCP server 'api-ai' (stdio) - provides access to multiple tools. Todo things"; got != want {
		t.Errorf("Description = %q, want %q", got, want)
	}
	var names []string
	for _, in := range g.Inputs() {
		names = append(names, in.Name)
	}
	if got := strings.Join(names, ","); got != "action,tool_name,tool_inputs,query,uri,name,arguments" {
		t.Errorf("Inputs = %s", got)
	}
	if st := g.Status(); st.State != session.StateIdle || st.PID != 0 {
		t.Errorf("Status after New = %+v, want idle and nothing started", st)
	}
	if got := g.StatusLine(map[string]any{"action": "execute", "tool_name": "create_todo"}); got != "Running create_todo on api-ai..." {
		t.Errorf("StatusLine = %q", got)
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc          string
		names, offers []string
		want          string
	}{
		{"", nil, nil, "MCP server 's' (http) - provides access to multiple tools"},
		{"", []string{"a", "b"}, []string{"tools"}, "MCP server 's' (http) - provides access to multiple tools. Tools: a, b"},
		{"Todo things", []string{"a"}, nil, "MCP server 's' (http) - provides access to multiple tools. Todo things. Tools: a"},
		{" A todo list. ", []string{"a"}, nil, "MCP server 's' (http) - provides access to multiple tools. A todo list. Tools: a"},
		{"Really?", nil, nil, "MCP server 's' (http) - provides access to multiple tools. Really?"},
		{"", []string{"a"}, []string{"tools", "resources", "prompts"}, "MCP server 's' (http) - provides access to multiple tools. " +
			"Also offers resources and prompts (actions list_resources, read_resource, list_prompts, get_prompt). Tools: a"},
	}
	for _, tt := range tests {
		if got := describe(mcpconfig.ServerConfig{Name: "s", Transport: mcpconfig.TransportHTTP, Description: tt.desc}, tt.names, tt.offers); got != tt.want {
			t.Errorf("describe(%q, %v) = %q, want %q", tt.desc, tt.names, got, tt.want)
		}
	}
}

func TestListKeepsRawSchemaAndExecuteEnforcesIt(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t)
	g := newGateway(t, f.config("fake"), nil)
	ctx := t.Context()

	res, err := g.Run(ctx, tools.Call{Args: map[string]any{"action": "list"}}, tools.Discard)
	if err != nil || res.IsError {
		t.Fatalf("list: %v %+v", err, res)
	}
	var got json.RawMessage
	for _, o := range res.Objects {
		if o["name"] == "compose" {
			got = o["inputs"].(json.RawMessage)
		}
	}
	if string(got) != composedSchema {
		t.Fatalf("schema not kept byte for byte:\n got %s\nwant %s", got, composedSchema)
	}
	// Each object comes with its JSON, which the environment reuses.
	if len(res.ObjectsJSON) != len(res.Objects) {
		t.Fatalf("%d objects, %d encoded", len(res.Objects), len(res.ObjectsJSON))
	}
	for i, o := range res.Objects {
		want, err := tools.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(res.ObjectsJSON[i], want) {
			t.Errorf("object %d encoded as\n%s\nwant\n%s", i, res.ObjectsJSON[i], want)
		}
	}
	if !strings.Contains(g.Description(), ". Tools: big, compose, echo, fail, hold, slow") {
		t.Errorf("Description after list = %q", g.Description())
	}

	_, err = g.Execute(ctx, "compose", map[string]any{"kind": "count"})
	var ae *tools.ArgumentError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "missing property 'n'") {
		t.Fatalf("if/then not enforced: %v", err)
	}
	_, err = g.Execute(ctx, "compose", map[string]any{})
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "missing property 'kind'") {
		t.Fatalf("allOf not enforced: %v", err)
	}
	f.mu.Lock()
	calls := f.calls
	f.mu.Unlock()
	if calls != 0 {
		t.Fatalf("server got %d calls for invalid inputs, want 0", calls)
	}
	cr, err := g.Execute(ctx, "compose", map[string]any{"kind": "count", "n": 2})
	if err != nil || cr.IsError || cr.Text() != "kind=count" {
		t.Fatalf("valid execute: %v %+v", err, cr)
	}
}

func TestRunErrorsAreSelfHealing(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t)
	g := newGateway(t, f.config("fake"), nil)
	ctx := t.Context()
	tests := []struct {
		name        string
		args        map[string]any
		wantErr     string
		wantFeedbak string
	}{
		{"unknown action", map[string]any{"action": "delete"}, `unknown action "delete"`, "list"},
		{"missing tool_name", map[string]any{"action": "execute"}, "tool_name is required", "list"},
		{"unknown tool", map[string]any{"action": "execute", "tool_name": "ecko"}, `unknown tool "ecko" on server "fake"`, `did you mean "echo"? available tools: big, compose, echo, fail, hold, slow`},
		{"bad inputs", map[string]any{"action": "execute", "tool_name": "echo", "tool_inputs": map[string]any{}}, "invalid tool_inputs for echo", "missing property 'message'"},
		{"isError", map[string]any{"action": "execute", "tool_name": "fail"}, "returned an error", "it broke"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := g.Run(ctx, tools.Call{Args: tt.args}, tools.Discard)
			if err != nil {
				t.Fatalf("Run returned a Go error: %v", err)
			}
			if !res.IsError || !strings.Contains(res.Error, tt.wantErr) || !strings.Contains(res.Feedback, tt.wantFeedbak) {
				t.Errorf("Run = error %q feedback %q, want %q / %q", res.Error, res.Feedback, tt.wantErr, tt.wantFeedbak)
			}
		})
	}
	if st := g.Status(); st.Calls != 1 || st.Failures != 1 {
		t.Errorf("Status calls/failures = %d/%d, want 1/1 (only the isError call reached the server)", st.Calls, st.Failures)
	}
}

func TestExecuteCapsOutput(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t)
	g := newGateway(t, f.config("fake"), nil)
	res, err := g.Run(t.Context(), tools.Call{Args: map[string]any{"action": "execute", "tool_name": "big"}}, tools.Discard)
	if err != nil || res.IsError {
		t.Fatalf("Run: %v %+v", err, res)
	}
	if !strings.HasSuffix(res.LLMText, "[output truncated: 204800 bytes, showing first 65536]") {
		t.Errorf("LLMText ends with %q", res.LLMText[max(0, len(res.LLMText)-80):])
	}
	if n := len(res.Objects[0]["text"].(string)); n > 64<<10 {
		t.Errorf("object text is %d bytes, want at most 64 KiB", n)
	}
}

func TestConcurrentCallsShareOneSession(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t)
	g := newGateway(t, f.config("fake"), nil)
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cr, err := g.Execute(t.Context(), "echo", map[string]any{"message": fmt.Sprint(i)})
			if err == nil && cr.Text() != fmt.Sprintf("Echo: %d", i) {
				err = fmt.Errorf("got %q", cr.Text())
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if st := g.Status(); st.State != session.StateConnected || st.Calls != 50 {
		t.Errorf("Status = %+v", st)
	}
}

func TestCallerCancelDoesNotKillSession(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t)
	g := newGateway(t, f.config("fake"), nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := g.Execute(ctx, "slow", nil)
		done <- err
	}()
	testenv.WaitFor(t, 5*time.Second, "connected", func() bool { return g.Status().State == session.StateConnected })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Execute after cancel = %v, want context.Canceled", err)
	}
	if _, err := g.Execute(t.Context(), "echo", map[string]any{"message": "still here"}); err != nil {
		t.Fatalf("session did not survive the first caller's cancel: %v", err)
	}
}

func TestCloseFailsInFlightAndLaterCalls(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t)
	g := New(f.config("fake"), nil)
	done := make(chan error, 1)
	go func() {
		_, err := g.Execute(t.Context(), "slow", nil)
		done <- err
	}()
	testenv.WaitFor(t, 5*time.Second, "connected", func() bool { return g.Status().State == session.StateConnected })
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() { defer wg.Done(); _ = g.Close() }()
	}
	wg.Wait()
	if err := <-done; !errors.Is(err, session.ErrClosed) {
		t.Errorf("in-flight call after Close = %v, want ErrClosed", err)
	}
	if _, err := g.List(t.Context()); !errors.Is(err, session.ErrClosed) {
		t.Errorf("List after Close = %v, want ErrClosed", err)
	}
}

func TestUnavailable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  mcpconfig.ServerConfig
		want string
	}{
		{"unresolved", mcpconfig.ServerConfig{Name: "s", Transport: mcpconfig.TransportHTTP, URL: "http://127.0.0.1:1/mcp", Enabled: true, Unresolved: "${env:TOKEN} has no value"}, "TOKEN"},
		{"disabled", mcpconfig.ServerConfig{Name: "s", Transport: mcpconfig.TransportHTTP, URL: "http://127.0.0.1:1/mcp"}, "disabled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGateway(t, tt.cfg, nil)
			ok, reason := g.Available(nil)
			if ok || !strings.Contains(reason, tt.want) || !strings.Contains(reason, `server "s"`) {
				t.Errorf("Available = %v %q", ok, reason)
			}
			if _, err := g.List(t.Context()); !errors.Is(err, session.ErrUnavailable) {
				t.Errorf("List = %v, want ErrUnavailable", err)
			}
		})
	}
}
