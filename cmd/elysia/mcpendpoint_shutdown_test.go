package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/internal/testenv"
)

// slowUpstream is an MCP server in this process, over HTTP, whose tool
// "slow" sleeps for its argument ms (or until its call is cancelled)
// and answers "slept"; it counts the calls that started, finished and
// were cancelled.
type slowUpstream struct {
	url                          string
	started, finished, cancelled atomic.Int32
}

func newSlowUpstream(t *testing.T) *slowUpstream {
	t.Helper()
	u := &slowUpstream{}
	s := mcpserver.NewMCPServer("slow", "1")
	s.AddTool(mcp.NewTool("slow", mcp.WithNumber("ms", mcp.Required())), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		u.started.Add(1)
		timer := time.NewTimer(time.Duration(req.GetFloat("ms", 0)) * time.Millisecond)
		defer timer.Stop()
		select {
		case <-timer.C:
			u.finished.Add(1)
			return mcp.NewToolResultText("slept"), nil
		case <-ctx.Done():
			u.cancelled.Add(1)
			return nil, ctx.Err()
		}
	})
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(s, mcpserver.WithDisableLocalhostProtection(true)))
	t.Cleanup(hs.Close)
	u.url = hs.URL + "/mcp"
	return u
}

// config is an mcp.json with u as server "up".
func (u *slowUpstream) config() string {
	return fmt.Sprintf(`{"servers": {"up": {"type": "http", "url": %q}}}`, u.url)
}

// wireMCP is an MCP session of /mcp over plain HTTP requests, to see the
// streams as they are on the wire.
type wireMCP struct {
	base, sid, version string
}

// openWire initializes a session at base that negotiates version.
func openWire(t *testing.T, base, version string) *wireMCP {
	t.Helper()
	w := &wireMCP{base: base, version: version}
	res := w.post(t, t.Context(), fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"wire","version":"1"}}}`, version))
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if w.sid = res.Header.Get("Mcp-Session-Id"); w.sid == "" {
		t.Fatalf("initialize: %d %s, no session id", res.StatusCode, body)
	}
	_ = w.post(t, t.Context(), `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body.Close()
	return w
}

// on is the same session sent to another replica.
func (w *wireMCP) on(base string) *wireMCP { c := *w; c.base = base; return &c }

func (w *wireMCP) do(t *testing.T, ctx context.Context, method, body string, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, w.base+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if w.sid != "" {
		req.Header.Set("Mcp-Session-Id", w.sid)
		req.Header.Set("MCP-Protocol-Version", w.version)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, w.base, err)
	}
	return res
}

func (w *wireMCP) post(t *testing.T, ctx context.Context, body string) *http.Response {
	t.Helper()
	return w.do(t, ctx, http.MethodPost, body, nil)
}

// callTool posts a tools/call of name with args as request id.
func (w *wireMCP) callTool(t *testing.T, ctx context.Context, id int, name string, args map[string]any) *http.Response {
	t.Helper()
	return w.post(t, ctx, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, name, jsonOf(args)))
}

// resume GETs the stream after the event last.
func (w *wireMCP) resume(t *testing.T, ctx context.Context, last string) *http.Response {
	t.Helper()
	return w.do(t, ctx, http.MethodGet, "", map[string]string{"Last-Event-ID": last})
}

// wireEvent is one event of an event stream.
type wireEvent struct{ id, data string }

// wireEvents reads res's events, or its one JSON body, until it ends or
// stop says so, and closes it.
func wireEvents(t *testing.T, res *http.Response, stop func(wireEvent) bool) []wireEvent {
	t.Helper()
	defer func() { _ = res.Body.Close() }()
	ct := res.Header.Get("Content-Type")
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(res.Body)
		t.Fatalf("stream: %d %s %s", res.StatusCode, ct, body)
	}
	if strings.HasPrefix(ct, "application/json") {
		body, _ := io.ReadAll(res.Body)
		return []wireEvent{{data: string(body)}}
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	var evs []wireEvent
	var ev wireEvent
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			evs = append(evs, ev)
			if stop != nil && stop(ev) {
				return evs
			}
			ev = wireEvent{}
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			ev.id = value
		case "data":
			ev.data += value
		}
	}
	return evs
}

// outcome is what the last event of evs says: "result: <text>", "error:
// <message>", or "none".
func outcome(evs []wireEvent) string {
	for i := len(evs) - 1; i >= 0; i-- {
		var m struct {
			Result *struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal([]byte(evs[i].data), &m) != nil {
			continue
		}
		switch {
		case m.Error != nil:
			return "error: " + m.Error.Message
		case m.Result != nil && len(m.Result.Content) > 0:
			return "result: " + m.Result.Content[0].Text
		}
	}
	return "none"
}

// TestPostgresReplicasMCPShutdownDrainsCalls sends SIGTERM to replica A
// one second into two 4 s calls: one whose client stays on A's stream,
// one whose client dropped its connection and resumes the stream on
// replica B. Both get their answer, the tool runs to its end once each
// and is never cancelled, and A exits 0.
func TestPostgresReplicasMCPShutdownDrainsCalls(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	up := newSlowUpstream(t)
	a := startService(t, serveOptions{Config: up.config(), Args: []string{"--db", dsn}})
	b := startService(t, serveOptions{Config: up.config(), Args: []string{"--db", dsn}})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	s := openWire(t, a.URL, mcp.ProtocolVersion20251125)
	kept := s.callTool(t, ctx, 1, "up__slow", map[string]any{"ms": 4000})
	keptEvents := make(chan []wireEvent, 1)
	go func() { keptEvents <- wireEvents(t, kept, nil) }()
	dropped := wireEvents(t, s.callTool(t, ctx, 2, "up__slow", map[string]any{"ms": 4000}), func(wireEvent) bool { return true })
	if len(dropped) != 1 || dropped[0].id == "" {
		t.Fatalf("the dropped call's stream began with %v, want its priming event", dropped)
	}
	testenv.WaitFor(t, 10*time.Second, "both calls to start upstream", func() bool { return up.started.Load() == 2 })

	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	resumed := wireEvents(t, s.on(b.URL).resume(t, ctx, dropped[0].id), nil)
	if got := outcome(resumed); got != "result: slept" {
		t.Errorf("the dropped call resumed on B after A got SIGTERM: %s (%d events), want its result", got, len(resumed))
	}
	if got := outcome(<-keptEvents); got != "result: slept" {
		t.Errorf("the call whose client stayed on A: %s, want its result", got)
	}
	select {
	case <-a.done:
	case <-time.After(15 * time.Second):
		t.Fatal("A did not exit after its calls")
	}
	if code := a.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("A exited %d, want 0", code)
	}
	if f, c := up.finished.Load(), up.cancelled.Load(); f != 2 || c != 0 {
		t.Errorf("upstream: %d calls finished, %d cancelled; want 2 and 0", f, c)
	}
}

// TestMCPEndpointShutdownGraceEnds sends SIGTERM to a service with a
// shutdown grace of 3 s while it runs an ask (its model answers after the
// signal) and two calls that would take a minute, one on a resumable
// stream, one of an older protocol's session: the ask is answered; the
// calls are cancelled upstream when the grace ends, and each client gets
// an error saying the service stopped before the call finished, within
// the grace; the service exits 0.
func TestMCPEndpointShutdownGraceEnds(t *testing.T) {
	t.Parallel()
	const grace = 3 * time.Second
	up := newSlowUpstream(t)
	hold := make(chan struct{})
	llm := newFakeLLM(t, reply{Tool: "text_response", Args: `{"text": "answered after the signal"}`, Hold: hold})
	s := startService(t, serveOptions{Config: up.config(), Env: llm.Env(), Args: []string{"--shutdown-grace", grace.String()}})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	type result struct {
		what string
		evs  []wireEvent
		at   time.Duration
	}
	results := make(chan result, 3)
	var signalled atomic.Int64
	run := func(what string, res *http.Response) {
		go func() {
			evs := wireEvents(t, res, nil)
			results <- result{what, evs, time.Since(time.Unix(0, signalled.Load()))}
		}()
	}
	w := openWire(t, s.URL, mcp.ProtocolVersion20251125)
	old := openWire(t, s.URL, mcp.ProtocolVersion20250618)
	run("the ask", w.callTool(t, ctx, 1, "ask", map[string]any{"question": "hello"}))
	run("the resumable call", w.callTool(t, ctx, 2, "up__slow", map[string]any{"ms": 60000}))
	run("the 2025-06-18 call", old.callTool(t, ctx, 1, "up__slow", map[string]any{"ms": 60000}))
	testenv.WaitFor(t, 30*time.Second, "the calls to start upstream and the ask to reach the model", func() bool {
		return up.started.Load() == 2 && llm.Waiting() == 1
	})

	signalled.Store(time.Now().UnixNano())
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "the service to log that it is shutting down", func() bool {
		return strings.Contains(s.Output(), "shutting down")
	})
	if llm.Cancelled() != 0 || up.cancelled.Load() != 0 {
		t.Fatal("the signal cancelled a running call")
	}
	close(hold)

	for range 3 {
		r := <-results
		got := outcome(r.evs)
		switch {
		case r.what == "the ask":
			if got != "result: answered after the signal" {
				t.Errorf("%s: %s, want its answer", r.what, got)
			}
		case !strings.Contains(got, "stopped before the call finished"):
			t.Errorf("%s: %s, want an error saying the service stopped before the call finished", r.what, got)
		}
		if r.at > grace+time.Second {
			t.Errorf("%s ended %v after SIGTERM, want within the grace of %v", r.what, r.at, grace)
		}
	}
	testenv.WaitFor(t, 10*time.Second, "both calls to be cancelled upstream", func() bool { return up.cancelled.Load() == 2 })
	select {
	case <-s.done:
	case <-time.After(2 * grace):
		t.Fatal("the service did not exit after the grace")
	}
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if f := up.finished.Load(); f != 0 {
		t.Errorf("%d calls finished upstream, want none", f)
	}
}
