package mcpendpoint

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// TestDrainLetsCallsFinish: a draining replica closes its GET streams at
// once and refuses new ones (503), but a call it runs goes on: its client,
// whose connection dropped, resumes the stream on another replica and
// gets the answer; WaitCalls returns once it has; the call is never
// cancelled, and the session stays in the SessionStore for the other
// replica.
func TestDrainLetsCallsFinish(t *testing.T) {
	w, up := newWaiter(t)
	src := &source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{gateway(t, "up", up)}}
	store := &memSessions{}
	var epA, epB *Endpoint
	epA = New(src, &Options{Sessions: store, Relay: newMemRelay(t, func() *Endpoint { return epB })})
	epB = New(src, &Options{Sessions: store, Relay: newMemRelay(t, func() *Endpoint { return epA })})
	urlA, urlB := serve(t, epA)+"/mcp", serve(t, epB)+"/mcp"

	s := wireInit(t, urlA, "alice", mcp.ProtocolVersion20251125)
	listening := s.do(t, s.request(t, http.MethodGet, ""))
	if listening.StatusCode != http.StatusOK {
		t.Fatalf("GET stream on A: %d", listening.StatusCode)
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_, _ = io.Copy(io.Discard, listening.Body)
		_ = listening.Body.Close()
	}()
	res := s.callWait(t)
	waitSignal(t, w.started, "the call to start on A")
	evs := readEvents(t, res, func(ev sseEvent) bool { return ev.data != "" }) // then the connection drops

	epA.Drain()
	waitSignal(t, closed, "A's GET stream to close when A drains")
	wantStatus(t, "a new GET stream on A while it drains", s.do(t, s.request(t, http.MethodGet, "")), http.StatusServiceUnavailable)
	short, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if epA.WaitCalls(short) {
		t.Fatal("WaitCalls returned while A's call runs")
	}

	onB := &wireSession{url: urlB, id: s.id, user: "alice"}
	resumed := onB.resume(t, evs[0].id)
	close(w.release)
	if got := kinds(readEvents(t, resumed, nil)); len(got) == 0 || got[len(got)-1] != "result: done" {
		t.Errorf("resumed on B while A drains: %q, want the result", got)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if !epA.WaitCalls(ctx) {
		t.Error("WaitCalls did not return once the answer reached the client")
	}
	select {
	case <-w.cancelled:
		t.Error("the call was cancelled by the drain")
	default:
	}
	if _, err := store.Session(ctx, s.id, "alice", time.Hour); err != nil {
		t.Errorf("the session's record after A drained: %v", err)
	}
}

// TestStopCallsTellsClients: StopCalls cancels the calls still running,
// upstream too, and each client, on a resumable stream or not, gets a
// JSON-RPC error saying the service stopped before the call finished.
func TestStopCallsTellsClients(t *testing.T) {
	w, up := newWaiter(t)
	e := New(&source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{gateway(t, "up", up)}}, nil)
	url := serve(t, e) + "/mcp"
	streamed := wireInit(t, url, "alice", mcp.ProtocolVersion20251125)
	older := wireInit(t, url, "alice", mcp.ProtocolVersion20250618)
	answers := make(chan string, 2)
	for _, s := range []*wireSession{streamed, older} {
		res := s.callWait(t)
		go func() {
			body, _ := io.ReadAll(res.Body)
			_ = res.Body.Close()
			answers <- string(body)
		}()
	}
	waitSignal(t, w.started, "the first call to start")
	waitSignal(t, w.started, "the second call to start")

	e.Drain()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if !e.StopCalls(ctx) {
		t.Error("StopCalls: the answers did not reach the clients")
	}
	for range 2 {
		if got := <-answers; !strings.Contains(got, "stopped before the call finished") {
			t.Errorf("a call StopCalls ended answered %s, want an error saying the service stopped before it finished", got)
		}
	}
	waitSignal(t, w.cancelled, "the first call to be cancelled upstream")
	waitSignal(t, w.cancelled, "the second call to be cancelled upstream")
}
