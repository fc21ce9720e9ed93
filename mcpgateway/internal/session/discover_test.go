package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

// rawSchema uses keywords mcp-go's typed schema drops: a raw tools/list
// keeps them.
const rawSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"message":{"type":"string"}},"allOf":[{"required":["message"]}]}`

// seenRequest is a POST a methodLog saw.
type seenRequest struct {
	method      string
	header      string // MCP-Protocol-Version
	mcpMethod   string // Mcp-Method
	metaVersion string // params._meta's protocol version
}

// methodLog records the JSON-RPC requests POSTed to next.
type methodLog struct {
	next http.Handler
	mu   sync.Mutex
	seen []seenRequest
}

func (l *methodLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) == nil && msg.Method != "" {
			v, _ := msg.Params.Meta[mcp.MetaKeyProtocolVersion].(string)
			l.mu.Lock()
			l.seen = append(l.seen, seenRequest{method: msg.Method, header: r.Header.Get(mcp.HeaderProtocolVersion),
				mcpMethod: r.Header.Get(mcp.HeaderMethod), metaVersion: v})
			l.mu.Unlock()
		}
	}
	l.next.ServeHTTP(w, r)
}

// count returns how many requests of method were seen.
func (l *methodLog) count(method string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.seen {
		if r.method == method {
			n++
		}
	}
	return n
}

// requests returns a copy of the requests of method seen.
func (l *methodLog) requests(method string) []seenRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []seenRequest
	for _, r := range l.seen {
		if r.method == method {
			out = append(out, r)
		}
	}
	return out
}

// only2026 serves h as a server that speaks only 2026-07-28: a POST of any
// other version is a method it does not know (404, -32601), which is what
// such a server answers to initialize. mcp-go's server alone is not one: it
// answers initialize whatever its transport's versions.
func only2026(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && !mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"Method not found"}}`)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// modernTools is what the 2026-07-28 fixtures serve: echo (with rawSchema),
// ask (asks the user's name, input_required, then greets the answer),
// forever (asks again each time: the call never ends) and roots (asks for
// the client's roots and lists them). forever counts its runs.
func modernTools(srv *mcpserver.MCPServer, forever *atomic.Int32) {
	srv.AddTool(mcp.NewToolWithRawSchema("echo", "echoes", json.RawMessage(rawSchema)),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("Echo: " + req.GetString("message", "")), nil
		})
	name := mcp.ElicitationParams{Message: "Your name?", RequestedSchema: map[string]any{
		"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []any{"name"}}}
	srv.AddTool(mcp.NewTool("ask"), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ans := mcpserver.ElicitationResponse(req.Params.InputResponses, "name")
		if ans == nil {
			return mcpserver.NewInputRequestBuilder("asked").Elicit("name", name).ToolResult(), nil
		}
		if ans.Action != mcp.ElicitationResponseActionAccept || req.Params.RequestState != "asked" {
			return mcp.NewToolResultText(fmt.Sprintf("no name (%s, state %q)", ans.Action, req.Params.RequestState)), nil
		}
		content, _ := ans.Content.(map[string]any)
		return mcp.NewToolResultText(fmt.Sprintf("hello %v", content["name"])), nil
	})
	srv.AddTool(mcp.NewTool("forever"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		n := forever.Add(1)
		return mcpserver.NewInputRequestBuilder(fmt.Sprint(n)).Elicit("name", name).ToolResult(), nil
	})
	srv.AddTool(mcp.NewTool("roots"), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		rs := mcpserver.RootsResponse(req.Params.InputResponses, "roots")
		if rs == nil {
			return mcpserver.NewInputRequestBuilder("").Roots("roots").ToolResult(), nil
		}
		var uris []string
		for _, r := range rs.Roots {
			uris = append(uris, r.URI)
		}
		return mcp.NewToolResultText(strings.Join(uris, ",")), nil
	})
}

// modernHTTP is a 2026-07-28-only MCP server over Streamable HTTP.
type modernHTTP struct {
	srv     *mcpserver.MCPServer
	log     *methodLog
	url     string
	forever atomic.Int32
}

func newModernHTTP(t *testing.T) *modernHTTP {
	t.Helper()
	m := &modernHTTP{srv: mcpserver.NewMCPServer("modern", "1.0.0", mcpserver.WithToolCapabilities(true))}
	modernTools(m.srv, &m.forever)
	h := mcpserver.NewStreamableHTTPServer(m.srv, mcpserver.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20260728))
	m.log = &methodLog{next: only2026(h)}
	hs := httptest.NewServer(m.log)
	t.Cleanup(hs.Close)
	m.url = hs.URL + "/mcp"
	return m
}

// asker is a user's stream that answers every question with answer.
type asker struct {
	mu     sync.Mutex
	asked  []tools.Question
	answer tools.Answer
}

func (a *asker) Emit(tools.Event) {}

func (a *asker) Ask(_ context.Context, q tools.Question) (tools.Answer, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, q)
	return a.answer, nil
}

func (a *asker) questions() []tools.Question {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]tools.Question(nil), a.asked...)
}

// testOptions are Options with every field a test does not care about set.
func testOptions() Options {
	return Options{CloseGrace: time.Second, CrashLoopDeaths: 5, CrashLoopWindow: time.Minute, CrashBackoff: time.Minute}
}

func newTestConn(t *testing.T, cfg mcpconfig.ServerConfig, o Options) *Conn {
	t.Helper()
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout, cfg.CallTimeout = 15*time.Second, 10*time.Second
	}
	cfg.Enabled = true
	c := New(cfg, o, slog.New(slog.DiscardHandler), func(s string) string { return s })
	t.Cleanup(c.Close)
	return c
}

// reconnect ends c's session and returns a new one.
func reconnect(t *testing.T, c *Conn) *Session {
	t.Helper()
	old, err := c.Session(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	old.MarkDead(errors.New("ended by the test"))
	s, err := c.Session(t.Context())
	if err != nil {
		t.Fatalf("reconnect: %v", err)
	}
	if s == old {
		t.Fatal("reconnect returned the ended session")
	}
	return s
}

func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return strings.Join(out, "\n")
}

// TestModernServerOverHTTP: a server that speaks only 2026-07-28 (before,
// the gateway sent it initialize, took the 404 for an SSE server and
// failed) gets a 2026-07-28 connection whose handshake is the one
// server/discover, every connect; tools/list, sent raw, carries the
// version in _meta and the headers and keeps the schemas as sent; a method
// the server lacks (404, -32601) is its answer, not a lost session.
func TestModernServerOverHTTP(t *testing.T) {
	t.Parallel()
	m := newModernHTTP(t)
	c := newTestConn(t, mcpconfig.ServerConfig{Name: "modern", Transport: mcpconfig.TransportHTTP, URL: m.url}, testOptions())
	s, err := c.Session(t.Context())
	if err != nil {
		t.Fatalf("connect to a 2026-07-28 server: %v", err)
	}
	if s.protocol != mcp.ProtocolVersion20260728 || c.Status().ProtocolVersion != mcp.ProtocolVersion20260728 {
		t.Errorf("protocol %q, status %q, want %s", s.protocol, c.Status().ProtocolVersion, mcp.ProtocolVersion20260728)
	}

	raw, err := c.ListTools(t.Context(), s)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	i := slices.IndexFunc(raw, func(rt RawTool) bool { return rt.Name == "echo" })
	if len(raw) != 4 || i < 0 || string(raw[i].InputSchema) != rawSchema {
		t.Errorf("ListTools = %+v, want 4 tools, echo's schema as sent", raw)
	}
	for _, r := range m.log.requests(string(mcp.MethodToolsList)) {
		if r.header != mcp.ProtocolVersion20260728 || r.metaVersion != mcp.ProtocolVersion20260728 || r.mcpMethod != "tools/list" {
			t.Errorf("tools/list sent with %+v, want 2026-07-28 in the header and _meta, and Mcp-Method", r)
		}
	}

	res, err := c.CallTool(t.Context(), s, Call{Tool: "echo", Inputs: map[string]any{"message": "hi"}})
	if err != nil || resultText(t, res) != "Echo: hi" {
		t.Fatalf("CallTool = %v, %v", res, err)
	}

	err = c.Do(t.Context(), "list_prompts", func(ctx context.Context, s *Session) error {
		_, err := s.Client().ListPrompts(ctx, mcp.ListPromptsRequest{})
		return err
	})
	if !errors.Is(err, mcp.ErrMethodNotFound) {
		t.Errorf("prompts/list of a server without prompts = %v, want method not found", err)
	}
	if c.Current() != s {
		t.Fatal("a method the server lacks retired the session")
	}

	reconnect(t, c)
	reconnect(t, c)
	if d, i := m.log.count(string(mcp.MethodServerDiscover)), m.log.count(string(mcp.MethodInitialize)); d != 3 || i != 0 {
		t.Errorf("three connects sent %d server/discover and %d initialize, want 3 and 0", d, i)
	}
}

// TestModernInputRequired: on 2026-07-28 the server asks through
// input_required results; mcp-go answers them with the session's handlers
// and sends the call again: the question reaches the call's user, roots
// come from the config, and a server that never stops asking gets
// MaxInputRounds requests and a clear error.
func TestModernInputRequired(t *testing.T) {
	t.Parallel()
	m := newModernHTTP(t)
	root := filepath.Join(t.TempDir(), "project")
	c := newTestConn(t, mcpconfig.ServerConfig{Name: "modern", Transport: mcpconfig.TransportHTTP, URL: m.url, Roots: []string{root}}, testOptions())
	s, err := c.Session(t.Context())
	if err != nil {
		t.Fatal(err)
	}

	u := &asker{answer: tools.Answer{Action: tools.ElicitAccept, Content: map[string]any{"name": "Ada"}}}
	res, err := c.CallTool(t.Context(), s, Call{Tool: "ask", User: "alice", Emit: u})
	if err != nil {
		t.Fatalf("ask: %v", err)
	}
	if got := resultText(t, res); got != "hello Ada" {
		t.Errorf("ask = %q, want the answer to the question", got)
	}
	if qs := u.questions(); len(qs) != 1 || qs[0].Payload.Message != "Your name?" || qs[0].Payload.Tool != "ask" || qs[0].Payload.Server != "modern" {
		t.Errorf("the user was asked %+v, want the server's one question", qs)
	}

	res, err = c.CallTool(t.Context(), s, Call{Tool: "roots", User: "alice", Emit: u})
	if err != nil {
		t.Fatalf("roots: %v", err)
	}
	if got, want := resultText(t, res), (&url.URL{Scheme: "file", Path: root}).String(); got != want {
		t.Errorf("roots = %q, want %q", got, want)
	}

	_, err = c.CallTool(t.Context(), s, Call{Tool: "forever", User: "alice", Emit: u})
	if !errors.Is(err, mcpclient.ErrMaxInputRoundTripsExceeded) || !strings.Contains(err.Error(), fmt.Sprintf("after %d requests", MaxInputRounds)) {
		t.Errorf("a call that asks forever = %v, want the bound on rounds", err)
	}
	if n := m.forever.Load(); n != MaxInputRounds {
		t.Errorf("the server got the call %d times, want %d", n, MaxInputRounds)
	}
	if c.Current() != s {
		t.Error("a call that asked too often retired the session")
	}
}

// TestModernListChanged: a 2026-07-28 connection has no GET stream; list
// changes come on subscriptions/listen.
func TestModernListChanged(t *testing.T) {
	t.Parallel()
	m := newModernHTTP(t)
	got := make(chan string, 16)
	o := testOptions()
	o.Notify = func(_ *Session, n mcp.JSONRPCNotification) {
		select {
		case got <- n.Method:
		default:
		}
	}
	c := newTestConn(t, mcpconfig.ServerConfig{Name: "modern", Transport: mcpconfig.TransportHTTP, URL: m.url}, o)
	if _, err := c.Session(t.Context()); err != nil {
		t.Fatal(err)
	}
	await := func(method string) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case m := <-got:
				if m == method {
					return
				}
			case <-deadline:
				t.Fatalf("no %s", method)
			}
		}
	}
	await("notifications/subscriptions/acknowledged")
	m.srv.AddTool(mcp.NewTool("added"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("new"), nil
	})
	await(string(mcp.MethodNotificationToolsListChanged))
}

// TestOlderServersOverHTTP: a server that does not speak only 2026-07-28
// gets the 2025-11-25 initialize after server/discover: one that offers an
// older version too (todo-mcp, as every mcp-go server by default), one
// that refuses 2026-07-28 (-32022), and a lenient one that answers
// server/discover with {} (mcp-go alone would take that for 2026-07-28).
// The answer is remembered for the server: later connects, of any user,
// send initialize at once, so the probe costs one round trip per process.
func TestOlderServersOverHTTP(t *testing.T) {
	t.Parallel()
	legacy := func(t *testing.T) http.Handler {
		t.Helper()
		srv := mcpserver.NewMCPServer("legacy", "1.0.0", mcpserver.WithToolCapabilities(true))
		modernTools(srv, new(atomic.Int32))
		return mcpserver.NewStreamableHTTPServer(srv, mcpserver.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20251125))
	}
	cases := map[string]func(t *testing.T) http.Handler{
		"both versions": func(t *testing.T) http.Handler {
			t.Helper()
			target, err := url.Parse(testenv.TodoHTTP(t, "http"))
			if err != nil {
				t.Fatal(err)
			}
			target.Path = ""
			return httputil.NewSingleHostReverseProxy(target)
		},
		"refuses 2026-07-28": legacy,
		"lenient": func(t *testing.T) http.Handler {
			t.Helper()
			next := legacy(t)
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				var msg struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				if json.Unmarshal(body, &msg) == nil && msg.Method == string(mcp.MethodServerDiscover) {
					w.Header().Set("Content-Type", "application/json")
					_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, msg.ID)
					return
				}
				next.ServeHTTP(w, r)
			})
		},
	}
	for name, serve := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			log := &methodLog{next: serve(t)}
			hs := httptest.NewServer(log)
			t.Cleanup(hs.Close)
			cfg := mcpconfig.ServerConfig{Name: "older", Transport: mcpconfig.TransportHTTP, URL: hs.URL + "/mcp"}
			o := testOptions()
			o.Handshake = &Handshake{}
			c := newTestConn(t, cfg, o)
			s, err := c.Session(t.Context())
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			if s.protocol != mcp.ProtocolVersion20251125 {
				t.Errorf("protocol %q, want %s", s.protocol, mcp.ProtocolVersion20251125)
			}
			reconnect(t, c)
			reconnect(t, c)
			// Another Conn of the server (another user's).
			if _, err := newTestConn(t, cfg, o).Session(t.Context()); err != nil {
				t.Fatal(err)
			}
			if d, i := log.count(string(mcp.MethodServerDiscover)), log.count(string(mcp.MethodInitialize)); d != 1 || i != 4 {
				t.Errorf("four connects sent %d server/discover and %d initialize, want 1 and 4", d, i)
			}
		})
	}
}

// TestOlderServersOverStdio: over stdio the initialize after a
// server/discover that gets no 2026-07-28-only answer goes to the same
// child, and is remembered, so later connects send initialize at once. A
// server that ignores the probe costs discoverWait once; a child that dies
// on it (an older server that chokes on a method it does not know) is
// started again at once with initialize, so even the first call succeeds.
func TestOlderServersOverStdio(t *testing.T) {
	t.Parallel()
	bin := testenv.TodoMCP(t)
	// The scripts put todo-mcp behind a shell that logs the first line
	// of its stdin and treats a server/discover there as the case says.
	const first = `IFS= read -r first
printf '%s\n' "$first" >> "$LOG"
`
	const replay = `
{ printf '%s\n' "$first"; exec cat; } | exec "$TODO_MCP"`
	cases := map[string]struct {
		script     string
		wantSpawns int32 // on the first connect
	}{
		"both versions":           {script: first + replay, wantSpawns: 1},
		"ignores server/discover": {script: first + `case "$first" in *'"server/discover"'*) IFS= read -r first;; esac` + replay, wantSpawns: 1},
		"dies on server/discover": {script: first + `case "$first" in *'"server/discover"'*) echo "unknown method" >&2; exit 3;; esac` + replay, wantSpawns: 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			logFile := filepath.Join(dir, "stdin.log")
			cfg := mcpconfig.ServerConfig{Name: "todo", Transport: mcpconfig.TransportStdio, Command: "sh", Args: []string{"-c", tc.script},
				Env:            map[string]string{"TODO_DB": filepath.Join(dir, "todo.db"), "TODO_MCP": bin, "LOG": logFile},
				ConnectTimeout: 8 * time.Second, CallTimeout: 5 * time.Second}
			var spawns atomic.Int32
			o := testOptions()
			o.OnProcessStart = func(int) { spawns.Add(1) }
			c := newTestConn(t, cfg, o)
			s, err := c.Session(t.Context())
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			if s.protocol != mcp.ProtocolVersion20251125 {
				t.Errorf("protocol %q, want %s", s.protocol, mcp.ProtocolVersion20251125)
			}
			if n := spawns.Load(); n != tc.wantSpawns {
				t.Errorf("the first connect started %d processes, want %d", n, tc.wantSpawns)
			}
			res, err := c.CallTool(t.Context(), s, Call{Tool: "list_todos"})
			if err != nil || res.IsError {
				t.Fatalf("list_todos: %v %+v", err, res)
			}
			reconnect(t, c)
			reconnect(t, c)
			if n := spawns.Load(); n != tc.wantSpawns+2 {
				t.Errorf("two reconnects started %d processes, want 2", n-tc.wantSpawns)
			}
			b, err := os.ReadFile(logFile)
			if err != nil {
				t.Fatal(err)
			}
			if d := bytes.Count(b, []byte(`"method":"server/discover"`)); d != 1 {
				t.Errorf("three connects sent %d server/discover, want 1", d)
			}
		})
	}
}

// TestModernServerOverStdio: a stdio server that names only 2026-07-28
// gets a 2026-07-28 connection, on the one process, and its questions
// reach the call's user.
func TestModernServerOverStdio(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var spawns atomic.Int32
	o := testOptions()
	o.OnProcessStart = func(int) { spawns.Add(1) }
	c := newTestConn(t, mcpconfig.ServerConfig{Name: "modern", Transport: mcpconfig.TransportStdio, Command: exe,
		Env: map[string]string{modernStdioEnv: "1"}}, o)
	s, err := c.Session(t.Context())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if s.protocol != mcp.ProtocolVersion20260728 || spawns.Load() != 1 {
		t.Errorf("protocol %q after %d processes, want %s after 1", s.protocol, spawns.Load(), mcp.ProtocolVersion20260728)
	}
	u := &asker{answer: tools.Answer{Action: tools.ElicitAccept, Content: map[string]any{"name": "Ada"}}}
	res, err := c.CallTool(t.Context(), s, Call{Tool: "ask", User: "alice", Emit: u})
	if err != nil || resultText(t, res) != "hello Ada" {
		t.Fatalf("ask = %v, %v; want the answer to the question", res, err)
	}
}

// TestServerMovesTo2026: a server remembered as taking initialize that
// now speaks only 2026-07-28 fails one connect, which forgets it; the next
// connect asks it with server/discover again and gets 2026-07-28.
func TestServerMovesTo2026(t *testing.T) {
	t.Parallel()
	old := mcpserver.NewMCPServer("old", "1.0.0", mcpserver.WithToolCapabilities(true))
	modernTools(old, new(atomic.Int32))
	legacy := mcpserver.NewStreamableHTTPServer(old, mcpserver.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20251125))
	srv := mcpserver.NewMCPServer("new", "1.0.0", mcpserver.WithToolCapabilities(true))
	modernTools(srv, new(atomic.Int32))
	modern := only2026(mcpserver.NewStreamableHTTPServer(srv, mcpserver.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20260728)))
	var moved atomic.Bool
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if moved.Load() {
			modern.ServeHTTP(w, r)
			return
		}
		legacy.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	// The connect that fails waits out connect_timeout: the 2026-07-28
	// server holds the SSE fallback's GET open without an endpoint.
	c := newTestConn(t, mcpconfig.ServerConfig{Name: "moving", Transport: mcpconfig.TransportHTTP, URL: hs.URL + "/mcp",
		ConnectTimeout: 2 * time.Second, CallTimeout: 2 * time.Second}, testOptions())
	s, err := c.Session(t.Context())
	if err != nil || s.protocol != mcp.ProtocolVersion20251125 || !c.hs.Legacy() {
		t.Fatalf("first connect: %v, protocol %q, remembered %v; want 2025-11-25, remembered", err, s.protocol, c.hs.Legacy())
	}
	moved.Store(true)
	s.MarkDead(errors.New("ended by the test"))
	if _, err := c.Session(t.Context()); err == nil {
		t.Fatal("initialize to a server that speaks only 2026-07-28 succeeded")
	}
	s, err = c.Session(t.Context())
	if err != nil || s.protocol != mcp.ProtocolVersion20260728 {
		t.Fatalf("connect after the move: %v, want 2026-07-28", err)
	}
}

// refuseFirst serves h, but answers the first POST with -32022 naming
// 2026-07-28, the version it was sent at, as supported: the conformance
// suite's request-metadata server does so.
func refuseFirst(h http.Handler) http.Handler {
	var refused atomic.Bool
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && refused.CompareAndSwap(false, true) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"],"requested":"2026-07-28"}}}`)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// TestDiscoverRefusedAtItsOwnVersion: a server that refuses server/discover
// at 2026-07-28 while naming 2026-07-28 as supported is asked once more at
// that version, and the connection is 2026-07-28; before, the gateway fell
// back to initialize, which such a server does not take.
func TestDiscoverRefusedAtItsOwnVersion(t *testing.T) {
	t.Parallel()
	m := newModernHTTP(t)
	hs := httptest.NewServer(refuseFirst(m.log))
	t.Cleanup(hs.Close)
	c := newTestConn(t, mcpconfig.ServerConfig{Name: "modern", Transport: mcpconfig.TransportHTTP, URL: hs.URL + "/mcp"}, testOptions())
	s, err := c.Session(t.Context())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if s.protocol != mcp.ProtocolVersion20260728 {
		t.Errorf("protocol %q, want 2026-07-28", s.protocol)
	}
	if d, i := m.log.count(string(mcp.MethodServerDiscover)), m.log.count(string(mcp.MethodInitialize)); d != 1 || i != 0 {
		t.Errorf("the server saw %d server/discover and %d initialize after the refusal, want 1 and 0", d, i)
	}
	if !refusesItsOwn(&mcptransport.JSONRPCResponse{Error: &mcp.JSONRPCErrorDetails{Code: mcp.UNSUPPORTED_PROTOCOL_VERSION,
		Data: map[string]any{"supported": []any{"2026-07-28"}}}}, nil, "2026-07-28") {
		t.Error("refusesItsOwn misses a refusal naming the version")
	}
	if refusesItsOwn(&mcptransport.JSONRPCResponse{Error: &mcp.JSONRPCErrorDetails{Code: mcp.UNSUPPORTED_PROTOCOL_VERSION,
		Data: map[string]any{"supported": []any{"2025-11-25"}}}}, nil, "2026-07-28") {
		t.Error("refusesItsOwn takes a refusal naming another version")
	}
}
