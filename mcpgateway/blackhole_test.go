package mcpgateway

// Black-hole tests for issue 8, section 2 ("Hangs"), and for the nil-pointer
// panic in mcp-go's client that an SSE black hole triggered (client.go:284:
// its SSE transport answered (nil, nil) when a deadline passed before the
// ctx was cancelled). Each of them hung or crashed before the transports
// were bounded; the comment on each says how.
//
// A black hole accepts the connection and then never answers: before the TCP
// handshake completes (a full accept queue), silently after accepting, after
// the response headers, after the SSE endpoint event, after accepting each
// POST with 202, or at one request (tools/list, tools/call, the DELETE on
// close). Every phase of every transport (dial, handshake, endpoint event,
// list, call, close) must end within the configured connect_timeout,
// call_timeout and CloseGrace, with an error that says what timed out;
// Close must return; no goroutine may be left behind.
//
// No assertion here is on elapsed time. Each operation gets a generous wait
// (bhWait), many times its configured bound; one still running then is a
// hang. The helpers are prefixed bh so as not to collide with the package's
// other test files; only the exported API is used.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

const (
	// The bounds configured on every black-holed server.
	bhConnect = 300 * time.Millisecond
	bhCall    = 300 * time.Millisecond
	bhGrace   = 300 * time.Millisecond

	// bhWait is how long a test waits for one operation before calling it a
	// hang: more than ten times any configured bound (room for -race on two
	// busy cores), yet below mcp-go's own fixed waits (5 s for the discover
	// probe and for the Streamable HTTP DELETE on close, 30 s for the SSE
	// endpoint and for net/http's default dialer, 60 s for an SSE
	// response), so that an operation bounded only by one of those counts as
	// unbounded by the configuration.
	bhWait = 4 * time.Second

	// bhChildEnv selects the role of this test binary when it is run again
	// as a stdio MCP server or as the handshake race's child.
	bhChildEnv = "ELYSIA_BLACKHOLE_CHILD"
)

// bhOptions shortens CloseGrace and keeps the crash-loop back-off out of the
// way of repeated connects.
func bhOptions() *Options {
	return &Options{CloseGrace: bhGrace, CrashLoopDeaths: 1 << 20}
}

func bhRemote(transport, url string) mcpconfig.ServerConfig {
	return mcpconfig.ServerConfig{Name: "hole", Transport: transport, URL: url, Enabled: true,
		ConnectTimeout: bhConnect, CallTimeout: bhCall}
}

// bhAnsweredConnect is the connect_timeout of a black-holed server whose
// handshake is answered: the variant tests a later phase, and a handshake
// on two busy cores under -race may take longer than bhConnect.
const bhAnsweredConnect = 2 * time.Second

// bhRemoteFor is bhRemote for a server black-holing in mode: one that
// answers its handshake gets bhAnsweredConnect.
func bhRemoteFor(transport, url string, mode bhMode) mcpconfig.ServerConfig {
	cfg := bhRemote(transport, url)
	switch mode {
	case bhNoList, bhNoCall, bhNoDelete:
		cfg.ConnectTimeout = bhAnsweredConnect
	}
	return cfg
}

// bhResult is what an operation run by bhRun returned.
type bhResult struct {
	err      error
	panicked any    // a recovered panic, nil if none
	stack    string // where it panicked
}

// bhRun runs op on a goroutine of its own, recovering a panic, and returns a
// channel that receives its result.
func bhRun(op func() error) <-chan bhResult {
	ch := make(chan bhResult, 1)
	go func() {
		var r bhResult
		defer func() {
			if p := recover(); p != nil {
				r.panicked = p
				buf := make([]byte, 16<<10)
				r.stack = string(buf[:runtime.Stack(buf, false)])
			}
			ch <- r
		}()
		r.err = op()
	}()
	return ch
}

// bhWaitFor waits up to wait for an operation's result. A panic fails t. A
// hang fails t and returns false; the operation keeps running, and the
// caller then closes the gateway, which may release it (see bhClose).
func bhWaitFor(t *testing.T, what string, ch <-chan bhResult, wait time.Duration) (bhResult, bool) {
	t.Helper()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case r := <-ch:
		if r.panicked != nil {
			t.Errorf("%s panicked: %v\n%s", what, r.panicked, r.stack)
		}
		return r, true
	case <-timer.C:
		t.Errorf("%s did not return within %v, many times its configured bound: it hangs", what, wait)
	case <-t.Context().Done():
		t.Errorf("%s: the test ended while waiting", what)
	}
	return bhResult{}, false
}

// bhClose closes g, which must return within bhWait, then collects the
// operations still running (ops), which Close must have released.
func bhClose(t *testing.T, g *Gateway, ops ...<-chan bhResult) {
	t.Helper()
	if _, ok := bhWaitFor(t, "Close", bhRun(g.Close), bhWait); !ok {
		return
	}
	for _, ch := range ops {
		bhWaitFor(t, "an operation still running when Close returned", ch, bhWait)
	}
}

// bhTimedOut fails t unless err says that a phase timed out: it must match
// context.DeadlineExceeded or say so in words, and name one of phase (e.g.
// "connect", "endpoint").
func bhTimedOut(t *testing.T, what string, err error, phase ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s = nil error, want a timeout", what)
		return
	}
	t.Logf("%s = %v", what, err)
	msg := strings.ToLower(err.Error())
	timedOut := errors.Is(err, context.DeadlineExceeded) || strings.Contains(msg, "timeout") ||
		strings.Contains(msg, "timed out") || strings.Contains(msg, "no answer within")
	named := false
	for _, p := range phase {
		named = named || strings.Contains(msg, p)
	}
	if !timedOut || !named {
		t.Errorf("%s = %v, want a timeout (context.DeadlineExceeded or a message saying so) naming one of %q", what, err, phase)
	}
}

// bhNotConnecting fails t if g still says connecting once the call that
// started the connect has returned with the connect's error: the attempt
// must be over.
func bhNotConnecting(t *testing.T, g *Gateway) {
	t.Helper()
	if st := g.Status(); st.State == session.StateConnecting {
		t.Errorf("state after the failed connect returned = %s, want idle or failed (last error %q)", st.State, st.LastError)
	}
}

// bhListThenExecute runs List and then, if List returned, Execute of noop
// with inputs, each checked by bhTimedOut against its phases (nil: the
// operation must succeed; for Execute, nil means it is not run), then
// closes g.
func bhListThenExecute(t *testing.T, g *Gateway, listWait time.Duration, listPhases, execPhases []string, inputs map[string]any) {
	t.Helper()
	list := bhRun(func() error { _, err := g.List(t.Context()); return err })
	r, ok := bhWaitFor(t, "List", list, listWait)
	if !ok {
		bhClose(t, g, list)
		return
	}
	if listPhases != nil {
		bhTimedOut(t, "List", r.err, listPhases...)
		bhNotConnecting(t, g)
	} else if r.err != nil {
		t.Errorf("List: %v", r.err)
		bhClose(t, g)
		return
	}
	if execPhases == nil {
		bhClose(t, g)
		return
	}
	exec := bhRun(func() error { _, err := g.Execute(t.Context(), "noop", inputs); return err })
	r, ok = bhWaitFor(t, "Execute", exec, bhWait)
	if !ok {
		bhClose(t, g, exec)
		return
	}
	bhTimedOut(t, "Execute", r.err, execPhases...)
	if listPhases != nil {
		bhNotConnecting(t, g)
	}
	bhClose(t, g)
}

// --- servers --------------------------------------------------------------

// bhDialHole returns the address of a listener whose accept queue is full
// (backlog 0, one connection queued and never accepted): Linux drops the SYN
// of every further connect, which then hangs in the dial. The test is
// skipped where the kernel refuses or completes such a connect instead.
func bhDialHole(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	syscall.CloseOnExec(fd)
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	filler, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = filler.Close() })
	// A second connect must hang, or this is no dial black hole.
	if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
		_ = c.Close()
		t.Skip("a connect to a full accept queue completes on this system")
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Skipf("a connect to a full accept queue fails at once on this system: %v", err)
	}
	return addr
}

// bhTCP is a silent TCP black hole: it accepts every connection and reads
// (and discards) whatever comes, never writing a byte.
type bhTCP struct {
	l     net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func newBHTCP(t *testing.T) *bhTCP {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &bhTCP{l: l}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.conns = append(b.conns, c)
			b.mu.Unlock()
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				_, _ = io.Copy(io.Discard, c)
			}()
		}
	}()
	t.Cleanup(b.close)
	return b
}

func (b *bhTCP) close() {
	_ = b.l.Close()
	b.mu.Lock()
	for _, c := range b.conns {
		_ = c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// bhMode says where a scripted server stops answering.
type bhMode int

const (
	bhHeadersOnly  bhMode = iota // SSE GET or HTTP POST: 200 and headers, then nothing
	bhEndpointOnly               // SSE: the endpoint event, then POSTs are never answered
	bhAccepted                   // SSE: every POST gets 202, nothing ever comes on the stream
	bhNoList                     // the handshake is answered; tools/list never is
	bhNoCall                     // the handshake and tools/list are answered; tools/call never is
	bhNoDelete                   // everything is answered but the Streamable HTTP DELETE on close
)

// Where bhURL points a gateway.
const (
	bhAtDialHole = "dial"     // a full accept queue: the connect never completes
	bhAtSilent   = "silent"   // a TCP black hole
	bhAtScripted = "scripted" // a scripted MCP server in the given mode
)

// bhURL starts the black hole hole (bhAt*) for the test and returns the
// URL that reaches it, with path (/sse for SSE, /mcp for Streamable HTTP).
func bhURL(t *testing.T, hole string, mode bhMode, path string) string {
	t.Helper()
	switch hole {
	case bhAtDialHole:
		return "http://" + bhDialHole(t) + path
	case bhAtSilent:
		return "http://" + newBHTCP(t).l.Addr().String() + path
	default:
		return newBHHTTP(t, mode).srv.URL + path
	}
}

// bhRPC is the part of a JSON-RPC message the scripted servers read.
type bhRPC struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// bhAnswer returns the scripted answer to msg, or "" for none. The script is
// a legacy server (server/discover is "method not found", so mcp-go falls
// back to initialize) with one tool, noop.
func bhAnswer(mode bhMode, msg bhRPC) string {
	if len(msg.ID) == 0 || string(msg.ID) == "null" {
		return "" // a notification
	}
	result := func(r string) string { return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, r) }
	switch msg.Method {
	case "initialize":
		return result(`{"protocolVersion":"2025-03-26","capabilities":{"tools":{}},"serverInfo":{"name":"blackhole","version":"0"}}`)
	case "ping":
		return result(`{}`)
	case "tools/list":
		if mode == bhNoList {
			return ""
		}
		return result(`{"tools":[{"name":"noop","inputSchema":{"type":"object"}}]}`)
	case "tools/call":
		if mode == bhNoCall {
			return ""
		}
		return result(`{"content":[{"type":"text","text":"ok"}]}`)
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, msg.ID)
}

// bhHTTP is a scripted MCP server over SSE (GET /sse, POST /message) and
// Streamable HTTP (/mcp), black-holed as its mode says. Requests it holds
// are released when the client gives up or the test ends.
type bhHTTP struct {
	mode   bhMode
	srv    *httptest.Server
	quit   chan struct{}
	events chan string // messages for the SSE stream
}

func newBHHTTP(t *testing.T, mode bhMode) *bhHTTP {
	t.Helper()
	b := &bhHTTP{mode: mode, quit: make(chan struct{}), events: make(chan string, 64)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /sse", b.sse)
	mux.HandleFunc("POST /message", b.message)
	mux.HandleFunc("/mcp", b.streamable)
	b.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		close(b.quit)
		b.srv.Close()
	})
	return b
}

// hold blocks until the client gives up or the test ends.
func (b *bhHTTP) hold(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-b.quit:
	}
}

func (b *bhHTTP) sse(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	if b.mode == bhHeadersOnly {
		b.hold(r)
		return
	}
	_, _ = io.WriteString(w, "event: endpoint\ndata: /message\n\n")
	w.(http.Flusher).Flush()
	for {
		select {
		case m := <-b.events:
			_, _ = fmt.Fprintf(w, "event: message\ndata: %s\n\n", m)
			w.(http.Flusher).Flush()
		case <-r.Context().Done():
			return
		case <-b.quit:
			return
		}
	}
}

func (b *bhHTTP) message(w http.ResponseWriter, r *http.Request) {
	var msg bhRPC
	_ = json.NewDecoder(r.Body).Decode(&msg)
	switch b.mode {
	case bhEndpointOnly:
		b.hold(r)
		return
	case bhAccepted:
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if a := bhAnswer(b.mode, msg); a != "" {
		b.events <- a
	}
	w.WriteHeader(http.StatusAccepted)
}

func (b *bhHTTP) streamable(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		w.WriteHeader(http.StatusMethodNotAllowed) // no standalone stream
		return
	case http.MethodDelete:
		if b.mode == bhNoDelete {
			b.hold(r)
		}
		return
	}
	var msg bhRPC
	_ = json.NewDecoder(r.Body).Decode(&msg)
	if b.mode == bhHeadersOnly {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		b.hold(r)
		return
	}
	a := bhAnswer(b.mode, msg)
	if a == "" {
		if len(msg.ID) == 0 || string(msg.ID) == "null" {
			w.WriteHeader(http.StatusAccepted) // a notification
			return
		}
		b.hold(r) // a request never answered
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if msg.Method == "initialize" {
		w.Header().Set("Mcp-Session-Id", "blackhole-session")
	}
	_, _ = io.WriteString(w, a)
}

// --- SSE ------------------------------------------------------------------

// bhConnectPhases are the words a failed connect's error may use to say
// what timed out.
var bhConnectPhases = []string{"connect", "endpoint", "initialize", "handshake"}

// TestBlackholeSSE drives List and then Execute against SSE servers that
// black-hole each phase.
//
// What it guards (issue 8, fixed in conn.go connect, which bounds the
// attempt by connect_timeout):
//   - "dial never completes" and "silent": List hung until Close. mcp-go's
//     SSE Start (client/transport/sse.go:287, httpClient.Do of the GET)
//     waits for the dial and the response headers with the ctx startRemote
//     gives it: the session's ctx, derived from the gateway's lifetime, with
//     no deadline (for the dial, only net/http's default 30 s dialer
//     timeout). Its endpoint timer (sse.go:341) starts only after the
//     headers. Unbounded there, the connect attempt did not end, the state
//     stayed connecting, and List and Execute waited for the attempt
//     (session() has no bound of its own) until Close cancelled the lifetime.
//
// Bounded by mcp-go itself: "headers then nothing" (WithEndpointTimeout(connect_timeout),
// counted from the headers: "timeout waiting for endpoint"), "endpoint then
// POSTs unanswered" (the handshake's ctx bounds the POSTs), "tools/list never
// answered" and "tools/call never answered" (the call's ctx bounds them).
// The sixth variant, every POST accepted with 202 and never answered, is
// TestBlackholeSSEHandshakeRace, which crashed the process before the fix.
func TestBlackholeSSE(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		hole       string
		mode       bhMode
		listPhases []string // what List's error must name; nil: List succeeds
		execPhases []string // what Execute's error must name
	}{
		{"dial never completes", bhAtDialHole, 0, bhConnectPhases, bhConnectPhases},
		{"silent", bhAtSilent, 0, bhConnectPhases, bhConnectPhases},
		{"headers then nothing", bhAtScripted, bhHeadersOnly, bhConnectPhases, bhConnectPhases},
		{"endpoint then POSTs unanswered", bhAtScripted, bhEndpointOnly, bhConnectPhases, bhConnectPhases},
		{"tools/list never answered", bhAtScripted, bhNoList, []string{"list"}, []string{"list"}},
		{"tools/call never answered", bhAtScripted, bhNoCall, nil, []string{"call_timeout", "call noop"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := New(bhRemoteFor(mcpconfig.TransportSSE, bhURL(t, tt.hole, tt.mode, "/sse"), tt.mode), bhOptions())
			bhListThenExecute(t, g, bhWait, tt.listPhases, tt.execPhases, nil)
		})
	}
}

// TestBlackholeSSECallerDeadline: a caller with a deadline of its own gets
// its error at that deadline, but the connect attempt it started belongs to
// the gateway and must still end within connect_timeout, not stay
// "connecting" (the issue watched it for 14 minutes).
//
// Before the fix (issue 8) List returned at the caller's deadline, but the
// state stayed connecting until Close (the attempt stuck in mcp-go's SSE
// Start, as in TestBlackholeSSE/silent).
func TestBlackholeSSECallerDeadline(t *testing.T) {
	t.Parallel()
	g := New(bhRemote(mcpconfig.TransportSSE, bhURL(t, bhAtSilent, 0, "/sse")), bhOptions())
	ctx, cancel := context.WithTimeout(t.Context(), bhCall)
	defer cancel()
	r, ok := bhWaitFor(t, "List", bhRun(func() error { _, err := g.List(ctx); return err }), bhWait)
	if ok && !errors.Is(r.err, context.DeadlineExceeded) {
		t.Errorf("List = %v, want context.DeadlineExceeded", r.err)
	}
	// Poll the state: the attempt must be over well within bhWait.
	ended := bhRun(func() error {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for g.Status().State == session.StateConnecting {
			select {
			case <-t.Context().Done():
				return t.Context().Err()
			case <-tick.C:
			}
		}
		return nil
	})
	if _, ok := bhWaitFor(t, "the connect attempt (state connecting)", ended, bhWait); !ok {
		bhClose(t, g, ended)
		return
	}
	bhClose(t, g)
}

// bhStaleCtx is a ctx whose deadline has passed but which is not done: what
// every context.WithTimeout ctx is between its deadline and the moment its
// timer's goroutine cancels it (measured at 0.4 to 1.1 ms here), widened to
// the whole call, so that the race behind issue 8's panic reproduces every
// time.
type bhStaleCtx struct{ context.Context }

func (bhStaleCtx) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// TestBlackholeSSEStaleDeadline reproduces, deterministically, the nil
// pointer dereference of issue 8. Once its POST is accepted, mcp-go's SSE
// SendRequest (client/transport/sse.go:671-676) computes
// time.Until(deadline) and, when that is <= 0, returns (nil, ctx.Err()):
// a nil response with a nil error while the deadline's timer has not fired
// yet. mcp-go's Client.sendRequest then reads response.Error
// (client/client.go:284), and our listRaw reads resp.Error the same way
// (list.go, after t.SendRequest).
//
// Before the fix (guards.go sseTransport) Execute panicked at client.go:284
// and List in listRaw; a panic is recovered here and reported.
func TestBlackholeSSEStaleDeadline(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		mode bhMode
		op   func(ctx context.Context, g *Gateway) error
	}{
		{"execute", bhNoCall, func(ctx context.Context, g *Gateway) error {
			_, err := g.Execute(ctx, "noop", nil)
			return err
		}},
		{"list", bhNoList, func(ctx context.Context, g *Gateway) error {
			_, err := g.List(ctx)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := New(bhRemote(mcpconfig.TransportSSE, bhURL(t, bhAtScripted, tt.mode, "/sse")), bhOptions())
			// Connect (and, for execute, list) with a live ctx: both are
			// answered.
			warm := func() error { return g.Connect(t.Context()) }
			if tt.mode == bhNoCall {
				warm = func() error { _, err := g.List(t.Context()); return err }
			}
			if r, ok := bhWaitFor(t, "warm-up", bhRun(warm), bhWait); !ok || r.err != nil {
				t.Errorf("warm-up: %v", r.err)
				bhClose(t, g)
				return
			}
			r, ok := bhWaitFor(t, tt.name+" with a passed deadline", bhRun(func() error { return tt.op(bhStaleCtx{t.Context()}, g) }), bhWait)
			if ok && r.panicked == nil && !errors.Is(r.err, context.DeadlineExceeded) {
				t.Errorf("%s with a passed deadline = %v, want context.DeadlineExceeded", tt.name, r.err)
			}
			bhClose(t, g)
		})
	}
}

// bhRaceIterations is how many connects the handshake race's child makes.
// Without the fix it crashed within the first five (ten runs out of ten,
// with and without -race); the whole loop takes about six seconds.
const bhRaceIterations = 200

// TestBlackholeSSEHandshakeRace reproduces the crash of issue 8 as `elysia
// mcp call` met it: an SSE server that accepts every POST with 202 and never
// answers. The handshake's ctx (connect_timeout) is also the deadline of
// mcp-go's server/discover probe (client/protocol.go:277: its own 5 s is
// later, so WithTimeout keeps the parent's). At that deadline sse.go's own
// response timer (set from time.Until(deadline), sse.go:670-684) fires
// before the ctx's timer has cancelled the ctx: the probe fails with
// "timeout waiting for SSE response" and a ctx that is not done. Initialize
// falls back to initializeLegacy on that same ctx (client.go:403); the ctx
// check in sendRequest (client.go:268) passes; the POST is accepted; and
// sse.go:671-676 returns (nil, nil), the ctx being still not cancelled
// (0.4 to 1.1 ms after its deadline, measured): client.go:284 dereferences
// the nil response on the gateway's connect goroutine, where nothing can
// recover it, and the process dies.
//
// The loop runs in a child process (this test binary again) so that the
// crash fails this test rather than killing the package's run. Each connect
// must also fail with a timeout naming the connect, within bhWait.
//
// Before the fix (guards.go sseTransport) the child panicked (nil pointer
// dereference at client.go:284) within the first few connects.
func TestBlackholeSSEHandshakeRace(t *testing.T) {
	t.Parallel()
	if os.Getenv(bhChildEnv) == "race" {
		bhHandshakeRaceChild(t)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.run=^TestBlackholeSSEHandshakeRace$", "-test.v")
	cmd.Env = append(os.Environ(), bhChildEnv+"=race")
	out, err := cmd.CombinedOutput()
	if s := string(out); err != nil || strings.Contains(s, "panic:") {
		if i := strings.Index(s, "panic:"); i >= 0 {
			s = s[i:]
		}
		if len(s) > 8000 {
			s = s[:8000]
		}
		t.Errorf("the handshake race's child failed (%v):\n%s", err, s)
	}
}

// bhHandshakeRaceChild connects bhRaceIterations times to an SSE server that
// accepts every POST with 202 and never answers. The first connect has the
// usual bhConnect; the others a short connect_timeout, so that the loop
// ends in seconds.
func bhHandshakeRaceChild(t *testing.T) {
	t.Helper()
	cfg := bhRemote(mcpconfig.TransportSSE, bhURL(t, bhAtScripted, bhAccepted, "/sse"))
	for i := range bhRaceIterations {
		if i == 1 {
			cfg.ConnectTimeout = 20 * time.Millisecond
		}
		g := New(cfg, bhOptions())
		what := fmt.Sprintf("connect %d: List", i)
		list := bhRun(func() error { _, err := g.List(t.Context()); return err })
		if r, ok := bhWaitFor(t, what, list, bhWait); ok {
			if r.err == nil || !errors.Is(r.err, context.DeadlineExceeded) && !strings.Contains(strings.ToLower(r.err.Error()), "timeout") {
				t.Errorf("%s = %v, want a timeout", what, r.err)
			}
			bhClose(t, g)
		} else {
			bhClose(t, g, list)
		}
		if t.Failed() {
			return
		}
	}
}

// --- Streamable HTTP -------------------------------------------------------

// TestBlackholeStreamable drives List and then Execute against Streamable
// HTTP servers that black-hole each phase.
//
// "DELETE on close never answered" guards guards.go abortRoundTripper:
// mcp-go's DELETE (client/transport/streamable_http.go:260-279) has its own
// context.Background with a fixed 5 s, longer than CloseGrace and than
// bhWait, and the session's ctx, cancelled after the grace, does not reach
// it; without the guard Close waited for it.
//
// Every other phase is bounded by the handshake's or the call's ctx.
func TestBlackholeStreamable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		hole       string
		mode       bhMode
		listPhases []string // what List's error must name; nil: List succeeds
		execPhases []string // what Execute's error must name; nil: not run
	}{
		{"dial never completes", bhAtDialHole, 0, bhConnectPhases, bhConnectPhases},
		{"silent", bhAtSilent, 0, bhConnectPhases, bhConnectPhases},
		{"headers then nothing", bhAtScripted, bhHeadersOnly, bhConnectPhases, bhConnectPhases},
		{"tools/list never answered", bhAtScripted, bhNoList, []string{"list"}, []string{"list"}},
		{"tools/call never answered", bhAtScripted, bhNoCall, nil, []string{"call_timeout", "call noop"}},
		{"DELETE on close never answered", bhAtScripted, bhNoDelete, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := New(bhRemoteFor(mcpconfig.TransportHTTP, bhURL(t, tt.hole, tt.mode, "/mcp"), tt.mode), bhOptions())
			bhListThenExecute(t, g, bhWait, tt.listPhases, tt.execPhases, nil)
		})
	}
}

// --- stdio ----------------------------------------------------------------

// Roles of this test binary run as a scripted stdio server.
const (
	bhStdioNoList   = "stdio-nolist"   // answers the handshake, never tools/list
	bhStdioNoCall   = "stdio-nocall"   // answers the handshake and tools/list, never tools/call
	bhStdioDeaf     = "stdio-deaf"     // as nocall, but stops reading stdin after tools/list
	bhStdioStubborn = "stdio-stubborn" // answers everything; ignores stdin EOF and SIGTERM
)

// bhStdioScripted returns a stdio config that runs this test binary as a
// scripted MCP server in role. Its connect_timeout is long (the child is a
// -race binary starting up): these cases black-hole the phases after the
// handshake.
func bhStdioScripted(t *testing.T, role string) mcpconfig.ServerConfig {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return mcpconfig.ServerConfig{Name: "hole", Transport: mcpconfig.TransportStdio, Command: exe, Enabled: true,
		Args:           []string{"-test.run=^TestBlackholeStdioChild$"},
		Env:            map[string]string{bhChildEnv: role},
		ConnectTimeout: 20 * time.Second, CallTimeout: bhCall}
}

// bhStdioShell returns a stdio config that runs script with sh.
func bhStdioShell(script string) mcpconfig.ServerConfig {
	return mcpconfig.ServerConfig{Name: "hole", Transport: mcpconfig.TransportStdio, Command: "sh", Args: []string{"-c", script},
		Enabled: true, ConnectTimeout: bhConnect, CallTimeout: bhCall}
}

// TestBlackholeStdioChild is not a test: it is the scripted stdio server
// that bhStdioScripted runs (skipped unless ELYSIA_BLACKHOLE_CHILD says so).
func TestBlackholeStdioChild(t *testing.T) {
	t.Parallel()
	role := os.Getenv(bhChildEnv)
	if !strings.HasPrefix(role, "stdio-") {
		t.Skip("run as a child by TestBlackholeStdio")
	}
	if role == bhStdioStubborn {
		signal.Ignore(syscall.SIGTERM)
	}
	mode := map[string]bhMode{bhStdioNoList: bhNoList, bhStdioNoCall: bhNoCall, bhStdioDeaf: bhNoCall, bhStdioStubborn: bhNoDelete}[role]
	in := bufio.NewReader(os.Stdin)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			if role == bhStdioStubborn {
				select {} // never exits on stdin close
			}
			os.Exit(0)
		}
		var msg bhRPC
		if json.Unmarshal(line, &msg) != nil {
			continue
		}
		if a := bhAnswer(mode, msg); a != "" {
			_, _ = os.Stdout.WriteString(a + "\n")
		}
		if role == bhStdioDeaf && msg.Method == "tools/list" {
			select {} // never reads stdin again
		}
	}
}

// TestBlackholeStdio drives stdio children that black-hole each phase, and
// checks that no child is left running after Close.
//
// "deaf child, call larger than the pipe" guards guards.go wedgeGuard;
// without it Execute hung until Close. mcp-go's Stdio SendRequest writes the
// request to the child's stdin (client/transport/stdio.go:648-649,
// c.stdin.Write under stdinMu) without looking at ctx; to a child that
// stopped reading, a request larger than what the pipe still holds (64 KiB
// at most) blocks there, past call_timeout, and holds stdinMu against every
// other request. Only closing stdin releases it.
//
// The others: the handshake and the waits for answers honour their ctx,
// and session.close signals the whole process group (SIGTERM after
// CloseGrace/2, SIGKILL after CloseGrace).
func TestBlackholeStdio(t *testing.T) {
	t.Parallel()
	big := map[string]any{"blob": strings.Repeat("x", 1<<20)}
	callPhases := []string{"call_timeout", "call noop"}
	tests := []struct {
		name       string
		cfg        func(t *testing.T) mcpconfig.ServerConfig
		listPhases []string // what List's error must name; nil: List succeeds
		execPhases []string // what Execute's error must name; nil: not run
		inputs     map[string]any
	}{
		// "; exit 0" keeps sh from exec'ing cat with stdout on /dev/null,
		// which would close the pipe: mcp-go would see EOF at once.
		{name: "never answers initialize", cfg: func(*testing.T) mcpconfig.ServerConfig { return bhStdioShell("cat >/dev/null; exit 0") },
			listPhases: bhConnectPhases},
		{name: "never answers, never exits", cfg: func(*testing.T) mcpconfig.ServerConfig { return bhStdioShell(`trap "" TERM; exec sleep 3600`) },
			listPhases: bhConnectPhases},
		{name: "tools/list never answered", cfg: func(t *testing.T) mcpconfig.ServerConfig { t.Helper(); return bhStdioScripted(t, bhStdioNoList) },
			listPhases: []string{"list"}},
		{name: "tools/call never answered", cfg: func(t *testing.T) mcpconfig.ServerConfig { t.Helper(); return bhStdioScripted(t, bhStdioNoCall) },
			execPhases: callPhases},
		{name: "deaf child, small call", cfg: func(t *testing.T) mcpconfig.ServerConfig { t.Helper(); return bhStdioScripted(t, bhStdioDeaf) },
			execPhases: callPhases},
		{name: "deaf child, call larger than the pipe", cfg: func(t *testing.T) mcpconfig.ServerConfig { t.Helper(); return bhStdioScripted(t, bhStdioDeaf) },
			execPhases: callPhases, inputs: big},
		{name: "ignores stdin close and SIGTERM", cfg: func(t *testing.T) mcpconfig.ServerConfig { t.Helper(); return bhStdioScripted(t, bhStdioStubborn) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var pids []int
			opts := bhOptions()
			opts.OnProcessStart = func(pid int) { mu.Lock(); pids = append(pids, pid); mu.Unlock() }
			cfg := tt.cfg(t)
			g := New(cfg, opts)
			// A List that the child answers includes the start of a -race
			// binary: it gets that child's connect_timeout and more.
			listWait := bhWait
			if cfg.ConnectTimeout > bhWait {
				listWait = cfg.ConnectTimeout + bhWait
			}
			bhListThenExecute(t, g, listWait, tt.listPhases, tt.execPhases, tt.inputs)
			mu.Lock()
			defer mu.Unlock()
			for _, pid := range pids {
				if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
					t.Errorf("child %d still exists after Close (kill 0: %v)", pid, err)
					_ = syscall.Kill(-pid, syscall.SIGKILL)
				}
			}
		})
	}
}

// TestBlackholeStdioAskingPrompt: a prompts/get that may ask its caller is
// bounded as a tool call is, and a child that stops reading its stdin
// cannot hold it past that bound either (the wedge guard watches the
// prompt's own deadline, not the caller's, which has none here).
func TestBlackholeStdioAskingPrompt(t *testing.T) {
	t.Parallel()
	g := New(bhStdioScripted(t, bhStdioDeaf), bhOptions())
	list := bhRun(func() error { _, err := g.List(t.Context()); return err })
	if r, ok := bhWaitFor(t, "List", list, 20*time.Second+bhWait); !ok || r.err != nil {
		if ok {
			t.Errorf("List: %v", r.err)
		}
		bhClose(t, g, list)
		return
	}
	big := map[string]string{"blob": strings.Repeat("x", 1<<20)} // larger than the pipe
	get := bhRun(func() error { _, err := g.GetPromptFor(t.Context(), "p", big, tools.Discard); return err })
	r, ok := bhWaitFor(t, "GetPromptFor", get, bhWait)
	if !ok {
		bhClose(t, g, get)
		return
	}
	bhTimedOut(t, "GetPromptFor", r.err, "call_timeout")
	bhClose(t, g)
}
