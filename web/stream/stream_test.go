package stream

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
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/web"
	"github.com/elysia-go/elysia/web/internal/webtest"
)

// waitTimeout bounds every wait on the server in these tests; they never
// sleep a fixed time.
const waitTimeout = 10 * time.Second

func startServer(t *testing.T, h *harness) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(h.srv.Handler()) // listens on 127.0.0.1
	t.Cleanup(ts.Close)
	return ts
}

// startServerClosing is startServer for a test that reads what handlers
// logged: closeAll closes the server and returns once every handler has
// returned. ts.Close alone waits only for the handlers of connections it
// still tracks, and a WebSocket's connection is hijacked, so its handler
// may still be running (and logging) after ts.Close returns.
func startServerClosing(t *testing.T, h *harness) (ts *httptest.Server, closeAll func()) {
	t.Helper()
	var handlers sync.WaitGroup
	inner := h.srv.Handler()
	ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlers.Add(1) // before the handler can affect the test, so before closeAll's Wait
		defer handlers.Done()
		inner.ServeHTTP(w, r)
	}))
	closeAll = func() {
		ts.Close()
		handlers.Wait()
	}
	t.Cleanup(closeAll)
	return ts, closeAll
}

// sseStream reads an event stream: data messages and ping comments.
type sseStream struct {
	t  *testing.T
	sc *bufio.Scanner
}

// next returns the next data message's payload, or "ping" for a heartbeat,
// or "" at the end of the stream.
func (s *sseStream) next() string {
	s.t.Helper()
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == ": ping":
			return "ping"
		case strings.HasPrefix(line, "data: "):
			return strings.TrimPrefix(line, "data: ")
		case line == "":
			continue
		default:
			s.t.Fatalf("unexpected SSE line %q", line)
		}
	}
	return ""
}

func postQuery(t *testing.T, ctx context.Context, ts *httptest.Server, path, body string, headers ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "POST", ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() }) // best effort: the stream may be cut already
	return resp
}

func readSSE(t *testing.T, resp *http.Response) []string {
	t.Helper()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &sseStream{t: t, sc: bufio.NewScanner(resp.Body)}
	var out []string
	for msg := s.next(); msg != ""; msg = s.next() {
		if msg != "ping" {
			out = append(out, msg)
		}
	}
	return out
}

func dialWS(t *testing.T, ctx context.Context, ts *httptest.Server, opts *websocket.DialOptions) *websocket.Conn {
	t.Helper()
	conn, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.URL, "http")+"/ws/query", opts)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial: %v (status %d)", err, status)
	}
	t.Cleanup(func() { _ = conn.CloseNow() }) // best effort: the test may have closed it
	return conn
}

func wsSend(t *testing.T, ctx context.Context, conn *websocket.Conn, msg string) {
	t.Helper()
	if err := conn.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		t.Fatal(err)
	}
}

func wsRead(t *testing.T, ctx context.Context, conn *websocket.Conn) string {
	t.Helper()
	_, b, err := conn.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(b)
}

func decodeEnvelope(t *testing.T, s string) tools.Envelope {
	t.Helper()
	var env tools.Envelope
	if err := json.Unmarshal([]byte(s), &env); err != nil {
		t.Fatalf("bad envelope %q: %v", s, err)
	}
	return env
}

func TestSSEAndWebSocketCarryIdenticalEnvelopes(t *testing.T) {
	h := newHarness(t, nil)
	ts := startServer(t, h)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()

	// Byte for byte as in DESIGN.md's appendix: "<= 5", not "\u003c= 5".
	var want []string
	for _, env := range webtest.AppendixEnvelopes("alice", "c1", "q1") {
		b, _ := tools.Marshal(env)
		want = append(want, string(b))
	}
	if !strings.Contains(strings.Join(want, "\n"), `"feedback":"/priority: must be <= 5"`) {
		t.Fatalf("the expected envelopes escape HTML:\n%s", strings.Join(want, "\n"))
	}

	sse := readSSE(t, postQuery(t, ctx, ts, "/query/alice/c1", `{"query": "add Buy milk", "query_id": "q1"}`))

	conn := dialWS(t, ctx, ts, nil)
	wsSend(t, ctx, conn, `{"user_id": "alice", "conversation_id": "c1", "query_id": "q1", "query": "add Buy milk"}`)
	var ws []string
	for range want {
		ws = append(ws, wsRead(t, ctx, conn))
	}
	if strings.Join(sse, "\n") != strings.Join(want, "\n") {
		t.Errorf("SSE envelopes:\n%s\nwant:\n%s", strings.Join(sse, "\n"), strings.Join(want, "\n"))
	}
	if strings.Join(ws, "\n") != strings.Join(sse, "\n") {
		t.Errorf("WebSocket envelopes differ from SSE:\n%s\nSSE:\n%s", strings.Join(ws, "\n"), strings.Join(sse, "\n"))
	}
}

func TestQueryIDGenerated(t *testing.T) {
	h := newHarness(t, nil)
	ts := startServer(t, h)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	msgs := readSSE(t, postQuery(t, ctx, ts, "/query/alice/c1", `{"query": "hi"}`))
	first := decodeEnvelope(t, msgs[0]).QueryID
	if len(first) != 16 {
		t.Fatalf("generated query_id = %q", first)
	}
	for _, m := range msgs {
		if got := decodeEnvelope(t, m).QueryID; got != first {
			t.Errorf("query_id %q, want %q in every envelope", got, first)
		}
	}
	conn := dialWS(t, ctx, ts, nil)
	wsSend(t, ctx, conn, `{"user_id": "alice", "conversation_id": "c1", "query": "hi"}`)
	if got := decodeEnvelope(t, wsRead(t, ctx, conn)).QueryID; len(got) != 16 {
		t.Errorf("WebSocket generated query_id = %q", got)
	}
}

func TestRunFailingAfterStartSendsErrorEvent(t *testing.T) {
	h := newHarness(t, nil)
	ts := startServer(t, h)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	msgs := readSSE(t, postQuery(t, ctx, ts, "/query/alice/c1", `{"query": "fail", "query_id": "q1"}`, requestIDHeader, "rid-7"))
	if len(msgs) != 2 {
		t.Fatalf("got %d messages, want status then error: %q", len(msgs), msgs)
	}
	env := decodeEnvelope(t, msgs[1])
	if env.Type != tools.EventError || string(env.Payload) != `{"text":"internal error (request id rid-7)"}` {
		t.Errorf("error event = %s %s", env.Type, env.Payload)
	}
	if strings.Contains(msgs[1], "secret") || !strings.Contains(h.logs.String(), "secret detail") {
		t.Errorf("detail must go to the log only")
	}
}

func TestWebSocketMessages(t *testing.T) {
	h := newHarness(t, nil)
	ts := startServer(t, h)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	conn := dialWS(t, ctx, ts, nil)
	tests := []struct{ msg, want string }{
		{`{"user_id": "alice", "conv`, `{"text":"invalid JSON message: unexpected end of input at offset 26"}`},
		{`{"user_id": "alice", "conversation_id": "c1"}`, `{"text":"missing field \"query\""}`},
		{`{"user_id": "alice", "conversation_id": "c1", "query_id": "q2", "query": "busy"}`, `{"text":"conversation c1: conversation is busy with another query"}`},
		{`{"user_id": "alice", "conversation_id": "c\u00001", "query": "hi"}`, `{"text":"conversation_id contains a control character"}`},
		{`{"user_id": "alice", "conversation_id": "a/b", "query": "hi"}`, `{"text":"conversation_id contains \"/\", which no path segment can hold"}`},
		{`{"user_id": "alice", "conversation_id": "c1", "query_id": "q\n3", "query": "hi"}`, `{"text":"query_id contains a control character"}`},
	}
	for _, tt := range tests {
		wsSend(t, ctx, conn, tt.msg)
		env := decodeEnvelope(t, wsRead(t, ctx, conn))
		if env.Type != tools.EventError || string(env.Payload) != tt.want {
			t.Errorf("for %s: got %s %s, want error %s", tt.msg, env.Type, env.Payload, tt.want)
		}
	}
}

func TestWebSocketSeveralQueries(t *testing.T) {
	h := newHarness(t, nil)
	ts := startServer(t, h)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	conn := dialWS(t, ctx, ts, nil)
	wsSend(t, ctx, conn, `{"user_id": "alice", "conversation_id": "c1", "query_id": "qa", "query": "one"}`)
	wsSend(t, ctx, conn, `{"user_id": "alice", "conversation_id": "c2", "query_id": "qb", "query": "two"}`)
	byQuery := map[string][]tools.EventType{}
	for range 12 {
		env := decodeEnvelope(t, wsRead(t, ctx, conn))
		byQuery[env.QueryID] = append(byQuery[env.QueryID], env.Type)
	}
	for _, q := range []string{"qa", "qb"} {
		got := byQuery[q]
		if len(got) != 6 || got[0] != tools.EventStatus || got[5] != tools.EventCompleted {
			t.Errorf("query %s: events %v", q, got)
		}
	}
}

// waitFor receives from ch or fails after waitTimeout.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitTimeout):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func TestClientDisconnectCancelsRun(t *testing.T) {
	t.Run("sse", func(t *testing.T) {
		h := newHarness(t, nil)
		ts := startServer(t, h)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		// The status line waits for the first event or heartbeat, so the
		// request is sent on its own goroutine.
		req, err := http.NewRequestWithContext(ctx, "POST", ts.URL+"/query/alice/c1", strings.NewReader(`{"query": "block", "query_id": "qx"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		errc := make(chan error, 1)
		go func() {
			resp, err := ts.Client().Do(req)
			if err == nil {
				_ = resp.Body.Close() // only Do's return matters
			}
			errc <- err
		}()
		waitFor(t, h.runner.started, "the run to start")
		cancel()
		if got := waitFor(t, h.runner.cancelled, "the run's ctx to end"); got != "qx" {
			t.Errorf("cancelled %q", got)
		}
		_ = waitFor(t, errc, "the client to return") // its error is the cancellation
	})
	t.Run("websocket", func(t *testing.T) {
		h := newHarness(t, nil)
		ts := startServer(t, h)
		ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
		defer cancel()
		conn := dialWS(t, ctx, ts, nil)
		wsSend(t, ctx, conn, `{"user_id": "alice", "conversation_id": "c1", "query_id": "qy", "query": "block"}`)
		waitFor(t, h.runner.started, "the run to start")
		_ = conn.CloseNow() // the abrupt close is the point; its effect is checked next
		if got := waitFor(t, h.runner.cancelled, "the run's ctx to end"); got != "qy" {
			t.Errorf("cancelled %q", got)
		}
	})
}

func TestHeartbeat(t *testing.T) {
	t.Run("sse", func(t *testing.T) {
		h := newHarness(t, &web.Options{Heartbeat: 10 * time.Millisecond})
		ts := startServer(t, h)
		ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
		defer cancel()
		resp := postQuery(t, ctx, ts, "/query/alice/c1", `{"query": "block", "query_id": "qh"}`)
		waitFor(t, h.runner.started, "the run to start")
		s := &sseStream{t: t, sc: bufio.NewScanner(resp.Body)}
		if got := s.next(); got == "ping" || decodeEnvelope(t, got).Type != tools.EventStatus {
			t.Fatalf("first message %q, want the run's first event", got)
		}
		if got := s.next(); got != "ping" {
			t.Fatalf("message on an idle stream %q, want a ping", got)
		}
		close(h.runner.release)
		for msg := s.next(); msg != ""; msg = s.next() {
			if msg != "ping" {
				if env := decodeEnvelope(t, msg); env.Type != tools.EventCompleted {
					t.Errorf("got %s, want completed", env.Type)
				}
				return
			}
		}
		t.Error("stream ended without completed")
	})
	t.Run("no ping before the run starts", func(t *testing.T) {
		// A query waiting for a busy conversation outlasts several
		// heartbeats and must still be refused with 409, not a 200 stream.
		h := newHarness(t, &web.Options{Heartbeat: 10 * time.Millisecond})
		ts := startServer(t, h)
		ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
		defer cancel()
		resp := postQuery(t, ctx, ts, "/query/alice/c1", `{"query": "slowbusy", "query_id": "qb"}`)
		if resp.StatusCode != http.StatusConflict {
			t.Fatalf("status %d, want 409", resp.StatusCode)
		}
	})
	t.Run("websocket", func(t *testing.T) {
		h := newHarness(t, &web.Options{Heartbeat: 10 * time.Millisecond})
		ts := startServer(t, h)
		ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
		defer cancel()
		pinged := make(chan struct{}, 1)
		conn := dialWS(t, ctx, ts, &websocket.DialOptions{OnPingReceived: func(context.Context, []byte) bool {
			select {
			case pinged <- struct{}{}:
			default:
			}
			return true
		}})
		wsSend(t, ctx, conn, `{"user_id": "alice", "conversation_id": "c1", "query_id": "qh", "query": "block"}`)
		waitFor(t, h.runner.started, "the run to start")
		// Pings are handled inside Read, so keep reading until the run ends;
		// the run's first event comes before the idle pings.
		readDone := make(chan string, 4)
		go func() {
			for {
				_, b, err := conn.Read(ctx)
				if err != nil {
					close(readDone)
					return
				}
				readDone <- string(b)
			}
		}()
		if env := decodeEnvelope(t, waitFor(t, readDone, "the first event")); env.Type != tools.EventStatus {
			t.Errorf("first event %s, want status", env.Type)
		}
		waitFor(t, pinged, "a ping")
		close(h.runner.release)
		if env := decodeEnvelope(t, waitFor(t, readDone, "completed")); env.Type != tools.EventCompleted {
			t.Errorf("got %s, want completed", env.Type)
		}
	})
}

func TestWebSocketQueryLimit(t *testing.T) {
	h := newHarnessWith(t, nil, Options{MaxQueriesPerSocket: 2})
	ts := startServer(t, h)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	conn := dialWS(t, ctx, ts, nil)
	byQuery := map[string][]tools.Envelope{}
	// readUntil reads envelopes into byQuery until done reports true.
	readUntil := func(done func() bool) {
		t.Helper()
		for !done() {
			env := decodeEnvelope(t, wsRead(t, ctx, conn))
			byQuery[env.QueryID] = append(byQuery[env.QueryID], env)
		}
	}
	ended := func(q string) bool {
		evs := byQuery[q]
		return len(evs) > 0 && (evs[len(evs)-1].Type == tools.EventCompleted || evs[len(evs)-1].Type == tools.EventError)
	}

	wsSend(t, ctx, conn, `{"user_id": "alice", "conversation_id": "c1", "query_id": "qa", "query": "block"}`)
	wsSend(t, ctx, conn, `{"user_id": "alice", "conversation_id": "c2", "query_id": "qb", "query": "block"}`)
	waitFor(t, h.runner.started, "the first run to start")
	waitFor(t, h.runner.started, "the second run to start")
	wsSend(t, ctx, conn, `{"user_id": "alice", "conversation_id": "c3", "query_id": "qc", "query": "block"}`)
	readUntil(func() bool { return ended("qc") })
	refusal := byQuery["qc"]
	const want = `{"text":"too many queries running on this socket (limit 2): wait for one to send completed before starting another"}`
	if len(refusal) != 1 || refusal[0].Type != tools.EventError || string(refusal[0].Payload) != want ||
		refusal[0].UserID != "alice" || refusal[0].ConversationID != "c3" {
		t.Fatalf("query over the limit got %+v, want one error event %s", refusal, want)
	}

	// The running queries go on, on the same socket.
	close(h.runner.release)
	readUntil(func() bool { return ended("qa") && ended("qb") })
	for _, q := range []string{"qa", "qb"} {
		if evs := byQuery[q]; evs[len(evs)-1].Type != tools.EventCompleted {
			t.Errorf("query %s ended with %s, want completed", q, evs[len(evs)-1].Type)
		}
	}
	if len(byQuery["qc"]) != 1 {
		t.Errorf("the refused query ran: %+v", byQuery["qc"])
	}

	// Once both have sent completed, both slots are free again, at once.
	wsSend(t, ctx, conn, `{"user_id": "alice", "conversation_id": "c1", "query_id": "qd", "query": "one"}`)
	wsSend(t, ctx, conn, `{"user_id": "alice", "conversation_id": "c2", "query_id": "qe", "query": "two"}`)
	readUntil(func() bool { return ended("qd") && ended("qe") })
	for _, q := range []string{"qd", "qe"} {
		if evs := byQuery[q]; len(evs) != 6 || evs[5].Type != tools.EventCompleted {
			t.Errorf("query %s after completed: %d events ending with %s, want the 6 of a run", q, len(evs), evs[len(evs)-1].Type)
		}
	}
}

func TestWebSocketQuerySlotFreedByCompleted(t *testing.T) {
	h := newHarnessWith(t, nil, Options{MaxQueriesPerSocket: 1})
	ts := startServer(t, h)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	conn := dialWS(t, ctx, ts, nil)
	// qa's run goes on after its completed; the client, told to wait for
	// completed, must still be able to start qb at once.
	wsSend(t, ctx, conn, `{"user_id": "alice", "conversation_id": "c1", "query_id": "qa", "query": "linger"}`)
	for {
		if env := decodeEnvelope(t, wsRead(t, ctx, conn)); env.Type == tools.EventCompleted {
			break
		}
	}
	wsSend(t, ctx, conn, `{"user_id": "alice", "conversation_id": "c2", "query_id": "qb", "query": "two"}`)
	for i := range 6 {
		env := decodeEnvelope(t, wsRead(t, ctx, conn))
		if env.QueryID != "qb" || env.Type == tools.EventError {
			t.Fatalf("message %d after qa's completed: %s %s for %s, want qb's run", i, env.Type, env.Payload, env.QueryID)
		}
	}
	close(h.runner.release)
}

func TestMaxQueriesPerSocketDefault(t *testing.T) {
	for _, n := range []int{0, -1} {
		h := newHarnessWith(t, nil, Options{MaxQueriesPerSocket: n})
		if got := h.st.maxSocketQueries; got != DefaultMaxQueriesPerSocket {
			t.Errorf("MaxQueriesPerSocket %d: limit %d, want %d", n, got, DefaultMaxQueriesPerSocket)
		}
	}
}

func TestWebSocketMessageLimit(t *testing.T) {
	h := newHarness(t, nil)
	ts := startServer(t, h)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	conn := dialWS(t, ctx, ts, nil)
	// message returns a query message of exactly n bytes.
	message := func(n int) string {
		const head, tail = `{"user_id": "alice", "conversation_id": "c1", "query_id": "q1", "query": "`, `"}`
		return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
	}

	wsSend(t, ctx, conn, message(web.DefaultMaxBodyBytes))
	for i := range 6 {
		if env := decodeEnvelope(t, wsRead(t, ctx, conn)); env.Type == tools.EventError {
			t.Fatalf("message %d for a message at the limit: error %s", i, env.Payload)
		}
	}

	wsSend(t, ctx, conn, message(web.DefaultMaxBodyBytes+1))
	_, _, err := conn.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusMessageTooBig || ce.Reason != "message too large (limit 1 MiB)" {
		t.Fatalf("read after a message over the limit: %v, want close 1009 naming the limit", err)
	}
}

func TestWebSocketHandshakeErrorsAreJSON(t *testing.T) {
	h := newHarness(t, nil)
	upgrade := []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13",
		"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}
	tests := []struct {
		name    string
		headers []string
		want    int
	}{
		// A plain GET, as from curl or a proxy that drops the Upgrade headers.
		{"ws_no_upgrade", nil, http.StatusUpgradeRequired},
		{"ws_bad_version", append(upgrade[:4:4], "Sec-WebSocket-Version", "8", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="), http.StatusBadRequest},
		{"ws_foreign_origin", append(upgrade, "Origin", "http://evil.example"), http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := h.do(t, "GET", "/ws/query", "", tt.headers...)
			if rec.Code != tt.want {
				t.Errorf("status %d, want %d: %s", rec.Code, tt.want, rec.Body)
			}
			if got := rec.Header().Get("Content-Type"); !strings.HasPrefix(got, "application/json") {
				t.Errorf("Content-Type %q, want JSON", got)
			}
			if tt.want == http.StatusUpgradeRequired && rec.Header().Get("Upgrade") != "websocket" {
				t.Errorf("426 without Upgrade: websocket")
			}
			checkGolden(t, tt.name, rec)
		})
	}
}

// stallWait bounds the wait for a stalled client's stream to end: its
// socket buffers must fill first.
const stallWait = 20 * time.Second

// TestStalledClientEndsStream checks that a client that stops reading but
// keeps its connection open cannot hold its run, and so its conversation:
// the first write that misses the write timeout ends the stream and
// cancels the run, as a disconnect does, and is logged once.
func TestStalledClientEndsStream(t *testing.T) {
	tests := []struct {
		name string
		// stall starts a "flood" query qs on alice/c1 with request id
		// rid-stall, and never reads its stream.
		stall func(t *testing.T, ctx context.Context, ts *httptest.Server)
	}{
		{"sse", func(t *testing.T, ctx context.Context, ts *httptest.Server) {
			t.Helper()
			var d net.Dialer
			conn, err := d.DialContext(ctx, "tcp", ts.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = conn.Close() }) // runs before ts.Close, which waits for the handler
			const body = `{"query": "flood", "query_id": "qs"}`
			req := "POST /query/alice/c1 HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" +
				requestIDHeader + ": rid-stall\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
			if _, err := io.WriteString(conn, req); err != nil {
				t.Fatal(err)
			}
		}},
		{"websocket", func(t *testing.T, ctx context.Context, ts *httptest.Server) {
			t.Helper()
			conn := dialWS(t, ctx, ts, &websocket.DialOptions{HTTPHeader: http.Header{requestIDHeader: {"rid-stall"}}})
			wsSend(t, ctx, conn, `{"user_id": "alice", "conversation_id": "c1", "query_id": "qs", "query": "flood"}`)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leaks := goleak.IgnoreCurrent()
			t.Cleanup(func() { goleak.VerifyNone(t, leaks) }) // the first cleanup registered runs last
			h := newHarness(t, &web.Options{StreamWriteTimeout: 100 * time.Millisecond})
			ts, closeAll := startServerClosing(t, h)
			ctx, cancel := context.WithTimeout(t.Context(), stallWait)
			defer cancel()

			tt.stall(t, ctx, ts)
			for _, step := range []struct {
				what string
				ch   <-chan string
			}{{"start", h.runner.started}, {"be cancelled", h.runner.cancelled}} {
				select {
				case got := <-step.ch:
					if got != "qs" {
						t.Fatalf("run %q, want qs", got)
					}
				case <-ctx.Done():
					t.Fatalf("the stalled client's run did not %s within %v", step.what, stallWait)
				}
			}

			// The conversation is free again: a query on it runs.
			msgs := readSSE(t, postQuery(t, ctx, ts, "/query/alice/c1", `{"query": "hi", "query_id": "qn"}`))
			if env := decodeEnvelope(t, msgs[len(msgs)-1]); env.Type != tools.EventCompleted {
				t.Errorf("query after the stall ended with %s %s, want completed", env.Type, env.Payload)
			}

			// The stalled stream's handler may still be running: the
			// library closes the socket when the write's deadline passes,
			// and the reader, seeing it closed, can cancel the run before
			// the writer returns from the write and logs the timeout.
			closeAll()
			var warned []map[string]any
			for line := range strings.Lines(h.logs.String()) {
				var rec map[string]any
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatalf("log line %q: %v", line, err)
				}
				if msg, _ := rec["msg"].(string); strings.HasPrefix(msg, "stream write timed out") {
					warned = append(warned, rec)
				}
			}
			if len(warned) != 1 {
				t.Fatalf("logged the timeout %d times, want once:\n%s", len(warned), h.logs)
			}
			want := map[string]any{"level": "WARN", "stream": tt.name, "request_id": "rid-stall",
				"user_id": "alice", "conversation_id": "c1", "query_id": "qs", "timeout": float64(100 * time.Millisecond)}
			for k, v := range want {
				if warned[0][k] != v {
					t.Errorf("log %s = %v, want %v", k, warned[0][k], v)
				}
			}
		})
	}
}

// burstRunner emits n large text events at once, faster than a stream
// writes them.
type burstRunner struct{ n int }

func (b burstRunner) RunQuery(_ context.Context, user, conv, queryID, _ string, emit func(tools.Envelope)) error {
	for i := range b.n {
		emit(tools.Envelope{Type: tools.EventText, ID: fmt.Sprintf("tex-%d", i), UserID: user, ConversationID: conv, QueryID: queryID,
			Payload: json.RawMessage(`{"type":"response","metadata":{},"objects":[{"text":"` + strings.Repeat("x", 70<<10) + `"}]}`)})
	}
	return nil
}

// Events queued behind one go out in the same write, up to a bound; none
// is lost when an event goes over the bound with others queued behind it.
func TestSSEWritesEveryQueuedEvent(t *testing.T) {
	const n = 40
	h := newHarnessWith(t, nil, Options{Runner: burstRunner{n}})
	ts := startServer(t, h)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	resp := postQuery(t, ctx, ts, "/query/alice/c1", `{"query": "x", "query_id": "q1"}`)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20) // each line is over 64 KiB
	s := &sseStream{t: t, sc: sc}
	var ids []string
	for msg := s.next(); msg != ""; msg = s.next() {
		if msg != "ping" {
			ids = append(ids, decodeEnvelope(t, msg).ID)
		}
	}
	if len(ids) != n {
		t.Fatalf("client got %d of %d events: %v", len(ids), n, ids)
	}
	for i, id := range ids {
		if id != fmt.Sprintf("tex-%d", i) {
			t.Fatalf("event %d is %s", i, id)
		}
	}
}
