package mcpendpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpendpoint/internal/sse"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// waiter is an upstream whose tool "wait" reports progress 1, waits for
// release (or its ctx) and answers "done"; cancelled receives once when a
// call's ctx ended first. (One report: the gateway coalesces reports
// close together, and mcp-go's Streamable HTTP server may drop one sent
// right before the answer.)
type waiter struct {
	release   chan struct{}
	started   chan struct{}
	cancelled chan struct{}
}

func newWaiter(t *testing.T) (*waiter, string) {
	t.Helper()
	w := &waiter{release: make(chan struct{}), started: make(chan struct{}, 8), cancelled: make(chan struct{}, 8)}
	s := mcpserver.NewMCPServer("up", "1")
	s.AddTool(mcp.NewTool("wait"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		srv := mcpserver.ServerFromContext(ctx)
		progress := func(p int) {
			if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
				_ = srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress),
					map[string]any{"progressToken": req.Params.Meta.ProgressToken, "progress": p, "total": 2})
			}
		}
		progress(1)
		w.started <- struct{}{}
		select {
		case <-w.release:
		case <-ctx.Done():
			w.cancelled <- struct{}{}
			return nil, ctx.Err()
		}
		return mcp.NewToolResultText("done"), nil
	})
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(s, mcpserver.WithDisableLocalhostProtection(true)))
	t.Cleanup(hs.Close)
	return w, hs.URL + "/mcp"
}

// wireSession is an MCP session over plain HTTP requests, to see the
// streams as they are on the wire.
type wireSession struct {
	url, id, user string
}

// wireInit opens a session that negotiates version.
func wireInit(t *testing.T, url, user, version string) *wireSession {
	t.Helper()
	s := &wireSession{url: url, user: user}
	res := s.post(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, version))
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if s.id = res.Header.Get(mcpserver.HeaderKeySessionID); s.id == "" {
		t.Fatalf("initialize: %d %s, no session id", res.StatusCode, body)
	}
	_ = s.post(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body.Close()
	return s
}

func (s *wireSession) request(t *testing.T, method, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, s.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-User", s.user)
	if s.id != "" {
		req.Header.Set(mcpserver.HeaderKeySessionID, s.id)
	}
	return req
}

func (s *wireSession) do(t *testing.T, req *http.Request) *http.Response {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (s *wireSession) post(t *testing.T, body string) *http.Response {
	t.Helper()
	return s.do(t, s.request(t, http.MethodPost, body))
}

// callWait posts a tools/call of up__wait with a progress token.
func (s *wireSession) callWait(t *testing.T) *http.Response {
	t.Helper()
	return s.post(t, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"up__wait","arguments":{},"_meta":{"progressToken":"tok"}}}`)
}

// resume GETs the stream after the event lastID.
func (s *wireSession) resume(t *testing.T, lastID string) *http.Response {
	t.Helper()
	req := s.request(t, http.MethodGet, "")
	req.Header.Set("Last-Event-ID", lastID)
	return s.do(t, req)
}

// sseEvent is one event of a stream.
type sseEvent struct {
	id, data string
	retry    time.Duration
}

// readEvents reads the events of res until it ends or until stop says
// so, and closes it.
func readEvents(t *testing.T, res *http.Response, stop func(sseEvent) bool) []sseEvent {
	t.Helper()
	defer func() { _ = res.Body.Close() }()
	rd := eventReader(t, res)
	var evs []sseEvent
	for {
		ev, ok := nextEvent(rd)
		if !ok {
			return evs
		}
		evs = append(evs, ev)
		if stop != nil && stop(ev) {
			return evs
		}
	}
}

// eventReader checks that res is an event stream and reads its events.
func eventReader(t *testing.T, res *http.Response) *sse.Reader {
	t.Helper()
	if ct := res.Header.Get("Content-Type"); res.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		body, _ := io.ReadAll(res.Body)
		t.Fatalf("stream: %d %s %s", res.StatusCode, ct, body)
	}
	return sse.NewReader(res.Body, 1<<20)
}

// nextEvent reads one event off r; false at the stream's end.
func nextEvent(r *sse.Reader) (sseEvent, bool) {
	ev, err := r.Next()
	return sseEvent{id: ev.ID, data: string(ev.Data), retry: ev.Retry}, err == nil
}

// kinds names each event: priming, progress N, or the result's text.
func kinds(evs []sseEvent) []string {
	var out []string
	for _, ev := range evs {
		var m struct {
			Method string `json:"method"`
			Params struct {
				Progress float64 `json:"progress"`
			} `json:"params"`
			Result struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		switch {
		case ev.data == "":
			out = append(out, "priming")
		case json.Unmarshal([]byte(ev.data), &m) != nil:
			out = append(out, "garbage: "+ev.data)
		case m.Method != "":
			out = append(out, fmt.Sprintf("%s %g", m.Method, m.Params.Progress))
		case m.Error != nil:
			out = append(out, "error: "+m.Error.Message)
		case len(m.Result.Content) > 0:
			out = append(out, "result: "+m.Result.Content[0].Text)
		default:
			out = append(out, "other: "+ev.data)
		}
	}
	return out
}

func resumeEndpoint(t *testing.T, poll time.Duration, opts *Options) (*waiter, string) {
	t.Helper()
	w, up := newWaiter(t)
	ex := mcpconfig.DefaultExpose()
	ex.StreamPoll = poll
	ep := New(&source{expose: ex, gws: []*mcpgateway.Gateway{gateway(t, "up", up)}}, opts)
	return w, serve(t, ep) + "/mcp"
}

func waitSignal(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestCallStreamPrimedAndOrdered: a 2025-11-25 session's call is answered
// on a stream that starts with a priming event (an id, a retry interval,
// no data), and carries every progress report, in order and each with an
// id, before the result.
func TestCallStreamPrimedAndOrdered(t *testing.T) {
	w, url := resumeEndpoint(t, 0, nil)
	s := wireInit(t, url, "alice", mcp.ProtocolVersion20251125)
	res := s.callWait(t)
	defer func() { _ = res.Body.Close() }()
	rd := eventReader(t, res)
	var evs []sseEvent
	for ev, ok := nextEvent(rd); ok; ev, ok = nextEvent(rd) {
		evs = append(evs, ev)
		if ev.data != "" && !strings.Contains(ev.data, `"result"`) {
			close(w.release) // the report is here: answer
		}
	}
	want := []string{"priming", "notifications/progress 1", "result: done"}
	if got := kinds(evs); strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Fatalf("events %q, want %q", got, want)
	}
	if evs[0].id == "" || evs[0].retry != 500*time.Millisecond {
		t.Errorf("priming event id %q retry %v, want an id and 500ms", evs[0].id, evs[0].retry)
	}
	for i, ev := range evs {
		if want := fmt.Sprintf("%s-%d", strings.TrimSuffix(evs[0].id, "-0"), i); ev.id != want {
			t.Errorf("event %d has id %q, want %q", i, ev.id, want)
		}
	}
}

// TestCallStreamSurvivesDisconnect: a client whose connection drops
// mid-call resumes with Last-Event-ID and gets what it missed and the
// result; the call was never cancelled. A resume naming no stream of the
// session, or another user's, gets 404.
func TestCallStreamSurvivesDisconnect(t *testing.T) {
	w, url := resumeEndpoint(t, 0, nil)
	s := wireInit(t, url, "alice", mcp.ProtocolVersion20251125)
	res := s.callWait(t)
	waitSignal(t, w.started, "the call to start")
	// Read the priming event and the first report, then hang up.
	evs := readEvents(t, res, func(ev sseEvent) bool { return ev.data != "" })
	if len(evs) != 2 {
		t.Fatalf("before hanging up: %q, want the priming event and the first report", kinds(evs))
	}
	last := evs[len(evs)-1].id
	close(w.release)

	rest := readEvents(t, s.resume(t, last), nil)
	if got, want := kinds(rest), []string{"result: done"}; strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Errorf("after resuming from %s: %q, want %q", last, got, want)
	}
	select {
	case <-w.cancelled:
		t.Error("the call was cancelled when the client's connection dropped")
	default:
	}
	// The stream is kept for a while after the result: a second resume
	// from the start gets everything again.
	if again := kinds(readEvents(t, s.resume(t, evs[0].id), nil)); len(again) != 2 || again[1] != "result: done" {
		t.Errorf("resume from the priming event: %q, want the report and the result", again)
	}

	for _, tt := range []struct{ name, id, user, last string }{
		{"unknown stream", s.id, "alice", strings.Repeat("ab", 16) + "-1"},
		{"another user's session", s.id, "bob", last},
	} {
		other := &wireSession{url: url, id: tt.id, user: tt.user}
		res := other.resume(t, tt.last)
		body, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d %s, want 404", tt.name, res.StatusCode, body)
		}
	}
}

// TestCallStreamPolled: with stream_poll the endpoint closes a call's
// stream before the answer, and the client's resume gets the rest.
func TestCallStreamPolled(t *testing.T) {
	w, url := resumeEndpoint(t, 100*time.Millisecond, nil)
	s := wireInit(t, url, "alice", mcp.ProtocolVersion20251125)
	res := s.callWait(t)
	waitSignal(t, w.started, "the call to start")
	evs := readEvents(t, res, nil) // ends after the poll, without the result
	close(w.release)
	evs = append(evs, readEvents(t, s.resume(t, evs[len(evs)-1].id), nil)...)
	want := []string{"priming", "notifications/progress 1", "result: done"}
	if got := kinds(evs); strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Errorf("polled stream, then the resumed one: %q, want %q", got, want)
	}
}

// TestCallStreamAbandoned: a call whose stream nobody takes up again
// within ResumeWait is cancelled upstream, and its stream is gone.
func TestCallStreamAbandoned(t *testing.T) {
	w, url := resumeEndpoint(t, 0, &Options{ResumeWait: 200 * time.Millisecond})
	s := wireInit(t, url, "alice", mcp.ProtocolVersion20251125)
	res := s.callWait(t)
	waitSignal(t, w.started, "the call to start")
	evs := readEvents(t, res, func(ev sseEvent) bool { return ev.data != "" })
	waitSignal(t, w.cancelled, "the abandoned call to be cancelled upstream")
	testenv.WaitFor(t, 5*time.Second, "the stream to be forgotten", func() bool {
		res := s.resume(t, evs[0].id)
		_ = res.Body.Close()
		return res.StatusCode == http.StatusNotFound
	})
}

// TestCallStreamEndsWithSession: ending the session (DELETE) cancels a
// call whose stream waits for a resume.
func TestCallStreamEndsWithSession(t *testing.T) {
	w, url := resumeEndpoint(t, 0, nil)
	s := wireInit(t, url, "alice", mcp.ProtocolVersion20251125)
	res := s.callWait(t)
	waitSignal(t, w.started, "the call to start")
	readEvents(t, res, func(ev sseEvent) bool { return ev.data != "" })
	del := s.do(t, s.request(t, http.MethodDelete, ""))
	_ = del.Body.Close()
	waitSignal(t, w.cancelled, "the call to be cancelled with its session")
}

// TestCallStreamOlderProtocol: a session that negotiated an older
// version than 2025-11-25 gets no priming event: its client may not
// understand one.
func TestCallStreamOlderProtocol(t *testing.T) {
	w, url := resumeEndpoint(t, 0, nil)
	s := wireInit(t, url, "alice", mcp.ProtocolVersion20250618)
	close(w.release)
	res := s.callWait(t)
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if strings.Contains(string(body), "retry:") || !strings.Contains(string(body), `"done"`) {
		t.Errorf("call of a 2025-06-18 session: %s, want its result and no priming event", body)
	}
}

// TestCallStreamResumesOnAnotherReplica: a call's stream resumed on a
// replica that does not run the call is served from the one that does,
// through the Relay, with the same event ids; a resume there that names a
// stream no replica holds still gets 404.
func TestCallStreamResumesOnAnotherReplica(t *testing.T) {
	w, up := newWaiter(t)
	src := &source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{gateway(t, "up", up)}}
	store := &memSessions{}
	var epA, epB *Endpoint
	epA = New(src, &Options{Sessions: store, Relay: newMemRelay(t, func() *Endpoint { return epB })})
	epB = New(src, &Options{Sessions: store, Relay: newMemRelay(t, func() *Endpoint { return epA })})
	urlA, urlB := serve(t, epA)+"/mcp", serve(t, epB)+"/mcp"

	s := wireInit(t, urlA, "alice", mcp.ProtocolVersion20251125)
	res := s.callWait(t)
	waitSignal(t, w.started, "the call to start on A")
	evs := readEvents(t, res, func(ev sseEvent) bool { return ev.data != "" })
	onB := &wireSession{url: urlB, id: s.id, user: "alice"}
	resumed := onB.resume(t, evs[0].id)
	close(w.release)
	rest := readEvents(t, resumed, nil)
	if got := kinds(rest); len(got) != 2 || got[0] != "notifications/progress 1" || got[1] != "result: done" {
		t.Errorf("resumed on B from the priming event: %q, want the report and the result", got)
	}
	if len(rest) == 2 && rest[1].id != strings.TrimSuffix(evs[0].id, "-0")+"-2" {
		t.Errorf("the result's id on B is %q, want A's numbering", rest[1].id)
	}
	select {
	case <-w.cancelled:
		t.Error("the call was cancelled")
	default:
	}
	start := time.Now()
	nowhere := onB.resume(t, strings.Repeat("cd", 16)+"-3")
	_ = nowhere.Body.Close()
	if d := time.Since(start); nowhere.StatusCode != http.StatusNotFound || d < resumeRelayWait {
		t.Errorf("resume of a stream no replica holds: %d after %v, want 404 after %v", nowhere.StatusCode, d, resumeRelayWait)
	}
}

// TestCallStreamPrimesAtOnce: a call that sends nothing for a while still
// gets its priming event out promptly (it waits at most primeDelay to
// leave with a quick answer), so that the client has an id to resume from.
func TestCallStreamPrimesAtOnce(t *testing.T) {
	w, url := resumeEndpoint(t, 0, nil)
	s := wireInit(t, url, "alice", mcp.ProtocolVersion20251125)
	res := s.post(t, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"up__wait","arguments":{}}}`) // no progress token: silent
	defer func() { _ = res.Body.Close() }()
	waitSignal(t, w.started, "the call to start")
	ev, ok := nextEvent(eventReader(t, res)) // the call still waits for release
	if !ok || ev.data != "" || ev.retry == 0 {
		t.Fatalf("first event %+v (%v), want the priming event before the answer", ev, ok)
	}
	close(w.release)
}

// droppingRelay is a Relay that loses every message once drop is set.
type droppingRelay struct {
	Relay
	drop atomic.Bool
}

func (r *droppingRelay) Publish(msg []byte) error {
	if r.drop.Load() {
		return nil // lost on the way, as a gone replica's are
	}
	return r.Relay.Publish(msg)
}

// TestCallStreamMirrorGivesUpOnSilence: a stream resumed on another
// replica is closed once the replica running the call has sent nothing,
// not even its keepalive, for MirrorSilence: the client's wait is bounded
// and it may resume again.
func TestCallStreamMirrorGivesUpOnSilence(t *testing.T) {
	w, up := newWaiter(t)
	src := &source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{gateway(t, "up", up)}}
	store := &memSessions{}
	var epA, epB *Endpoint
	aToB := &droppingRelay{Relay: newMemRelay(t, func() *Endpoint { return epB })}
	epA = New(src, &Options{Sessions: store, Relay: aToB})
	epB = New(src, &Options{Sessions: store, Relay: newMemRelay(t, func() *Endpoint { return epA })})
	epA.hub.Streams().Keepalive, epB.hub.Streams().Keepalive = 100*time.Millisecond, 100*time.Millisecond // silence: 300 ms, more than a busy machine delays one
	urlA, urlB := serve(t, epA)+"/mcp", serve(t, epB)+"/mcp"

	s := wireInit(t, urlA, "alice", mcp.ProtocolVersion20251125)
	res := s.callWait(t)
	waitSignal(t, w.started, "the call to start on A")
	evs := readEvents(t, res, func(ev sseEvent) bool { return ev.data != "" })
	onB := &wireSession{url: urlB, id: s.id, user: "alice"}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second) // a stream never closed fails the test, not hangs it
	defer cancel()
	req := onB.request(t, http.MethodGet, "").WithContext(ctx)
	req.Header.Set("Last-Event-ID", evs[1].id)
	resumed := onB.do(t, req)
	// Keepalives come while the call is silent: the stream stays open
	// well past MirrorSilence.
	time.AfterFunc(4*epB.hub.Streams().MirrorSilence(), func() { aToB.drop.Store(true) })
	start := time.Now()
	rest := readEvents(t, resumed, nil) // ends when B gives A up
	if d := time.Since(start); d < 4*epB.hub.Streams().MirrorSilence() || ctx.Err() != nil || len(rest) != 0 {
		t.Errorf("resumed stream ended after %v with %q; want it open while A sent keepalives, then closed without an answer", d, kinds(rest))
	}
	close(w.release)
}

// memReplicas is Replicas in memory, as the replicas' shared table.
type memReplicas struct {
	mu    sync.Mutex
	until map[string]time.Time
}

func (m *memReplicas) RenewReplica(_ context.Context, tag string, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.until == nil {
		m.until = map[string]time.Time{}
	}
	m.until[tag] = time.Now().Add(ttl)
	return nil
}

func (m *memReplicas) LiveReplicas(context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var tags []string
	for tag, until := range m.until {
		if time.Now().Before(until) {
			tags = append(tags, tag)
		}
	}
	return tags, nil
}

func (m *memReplicas) DropReplica(_ context.Context, tag string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.until, tag)
	return nil
}

// gate holds up whoever waits on it while it is shut, as a frozen
// replica holds up the messages sent to it. Its zero value is open.
type gate struct {
	mu sync.Mutex
	c  chan struct{} // closed when open; nil is open
}

func (g *gate) shut() { g.mu.Lock(); g.c = make(chan struct{}); g.mu.Unlock() }

func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.c != nil {
		close(g.c)
		g.c = nil
	}
}

func (g *gate) wait() {
	g.mu.Lock()
	c := g.c
	g.mu.Unlock()
	if c != nil {
		<-c
	}
}

// leasedReplicas returns endpoints A and B over up sharing a SessionStore,
// a Relay and Replicas, each keeping its lease (Run) until stopA or
// stopB, or the test's end; what B sends A waits while toA is shut.
func leasedReplicas(t *testing.T, up string, toA *gate) (epA, epB *Endpoint, reps *memReplicas, stopA func()) {
	t.Helper()
	src := &source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{gateway(t, "up", up)}}
	store, reps := &memSessions{}, &memReplicas{}
	epA = New(src, &Options{Sessions: store, Replicas: reps, Relay: newMemRelay(t, func() *Endpoint { return epB })})
	epB = New(src, &Options{Sessions: store, Replicas: reps, Relay: newMemRelay(t, func() *Endpoint { toA.wait(); return epA })})
	t.Cleanup(toA.open) // before the Relay's goroutine is waited for
	run := func(e *Endpoint) func() {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); e.Run(ctx) }()
		stop := func() { cancel(); <-done }
		t.Cleanup(stop)
		return stop
	}
	stopA = run(epA)
	run(epB)
	testenv.WaitFor(t, 5*time.Second, "both replicas' leases", func() bool {
		live, _ := reps.LiveReplicas(t.Context())
		return len(live) == 2
	})
	return epA, epB, reps, stopA
}

// TestCallStreamResumeWaitsForSlowHolder: a resume that lands on replica
// B while replica A, which runs the call, does not answer through the
// Relay for longer than resumeRelayWait, but keeps its liveness lease,
// gets 503 with Retry-After, not 404 (which would make the client call
// again and run the tool twice); once A answers again, the client's next
// resume gets the answer of the call, which ran once.
func TestCallStreamResumeWaitsForSlowHolder(t *testing.T) {
	w, up := newWaiter(t)
	toA := &gate{}
	epA, epB, _, _ := leasedReplicas(t, up, toA)
	urlA, urlB := serve(t, epA)+"/mcp", serve(t, epB)+"/mcp"

	s := wireInit(t, urlA, "alice", mcp.ProtocolVersion20251125)
	res := s.callWait(t)
	waitSignal(t, w.started, "the call to start on A")
	evs := readEvents(t, res, func(ev sseEvent) bool { return ev.data != "" }) // then the connection drops
	onB := &wireSession{url: urlB, id: s.id, user: "alice"}

	toA.shut()
	wantStatus(t, "a resume on B while A is frozen", onB.resume(t, evs[1].id), http.StatusServiceUnavailable)
	close(w.release) // the call ends on A meanwhile
	toA.open()
	var rest []sseEvent
	testenv.WaitFor(t, 20*time.Second, "a resume on B to get the answer", func() bool {
		res := onB.resume(t, evs[1].id)
		if res.StatusCode == http.StatusServiceUnavailable && res.Header.Get("Retry-After") != "" {
			_ = res.Body.Close()
			return false
		}
		rest = readEvents(t, res, nil)
		// A stream that closes before the answer (the holder slow to
		// forward on a loaded machine) is resumed again, as a client does.
		return len(rest) > 0
	})
	if got := kinds(rest); len(got) != 1 || got[0] != "result: done" {
		t.Errorf("resumed on B once A answered again: %q, want the result", got)
	}
	select {
	case <-w.started:
		t.Error("the tool ran twice")
	case <-w.cancelled:
		t.Error("the call was cancelled")
	default:
	}
}

// TestCallStreamResumeOfGoneReplica: with liveness leases, a resume on B
// of a stream of replica A whose lease is gone (it stopped, or its lease
// expired) and which does not answer gets 404 "its replica is gone"; one
// of a stream that no live replica holds gets 404 as soon as every other
// replica said so, before resumeRelayWait.
func TestCallStreamResumeOfGoneReplica(t *testing.T) {
	w, up := newWaiter(t)
	toA := &gate{}
	epA, epB, _, stopA := leasedReplicas(t, up, toA)
	urlA, urlB := serve(t, epA)+"/mcp", serve(t, epB)+"/mcp"
	s := wireInit(t, urlA, "alice", mcp.ProtocolVersion20251125)
	onB := &wireSession{url: urlB, id: s.id, user: "alice"}

	start := time.Now()
	wantStatus(t, "a resume on B of a stream no replica holds", onB.resume(t, strings.Repeat("cd", 16)+"-1"), http.StatusNotFound)
	if d := time.Since(start); d >= resumeRelayWait {
		t.Errorf("the resume of a stream no live replica holds answered after %v, want before resumeRelayWait (%v)", d, resumeRelayWait)
	}

	res := s.callWait(t)
	waitSignal(t, w.started, "the call to start on A")
	evs := readEvents(t, res, func(ev sseEvent) bool { return ev.data != "" })
	toA.shut()
	stopA() // A's lease goes
	wantStatus(t, "a resume on B of the stream of A, gone", onB.resume(t, evs[1].id), http.StatusNotFound)
	close(w.release)
}
