package mcpendpoint

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// ssePost posts body to base+path (the endpoint event's message URL) as
// user and returns the status and the answer's body.
func ssePost(t *testing.T, ctx context.Context, base, path, user, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-User", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	got, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(got)
}

// TestSSESessionAcrossReplicas: a legacy SSE client whose stream is open
// on endpoint A posts its messages to endpoint B (a load balancer without
// sticky sessions sent them there): B answers 202 at once and the answers
// come on A's stream; B refuses the session to another user and an
// unknown session (404), and a body that is not JSON gets a parse error;
// the stream's end removes the shared record.
func TestSSESessionAcrossReplicas(t *testing.T) {
	src := &source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{gateway(t, "good", upstream(t, "echo"))}}
	store := &memSessions{}
	var epA, epB *Endpoint
	epA = New(src, &Options{Sessions: store, Relay: newMemRelay(t, func() *Endpoint { return epB })})
	epB = New(src, &Options{Sessions: store, Relay: newMemRelay(t, func() *Endpoint { return epA })})
	urlA, urlB := serve(t, epA), serve(t, epB)

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	streamCtx, closeStream := context.WithCancel(ctx)
	defer closeStream()
	req, err := http.NewRequestWithContext(streamCtx, http.MethodGet, urlA+"/sse", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-User", "alice")
	stream, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stream.Body.Close() }()
	rd := eventReader(t, stream)
	ev, ok := nextEvent(rd)
	if !ok || !strings.HasPrefix(ev.data, "/message?sessionId=") {
		t.Fatalf("the endpoint event: %q", ev.data)
	}
	path := ev.data
	answer := func(what string) string {
		t.Helper()
		ev, ok := nextEvent(rd)
		if !ok {
			t.Fatalf("A's stream ended before the answer to %s", what)
		}
		return ev.data
	}

	steps := []struct{ what, body, want string }{
		{"initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}`, `"serverInfo"`},
		{"notifications/initialized", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, ""},
		{"tools/list", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, `"good__echo"`},
		{"tools/call", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"good__echo","arguments":{"message":"via B"}}}`, `echo: via B`},
	}
	for _, s := range steps {
		if code, body := ssePost(t, ctx, urlB, path, "alice", s.body); code != http.StatusAccepted {
			t.Fatalf("%s posted to B: %d %s, want 202", s.what, code, body)
		}
		if s.want == "" {
			continue
		}
		if got := answer(s.what); !strings.Contains(got, s.want) {
			t.Fatalf("the answer to %s on A's stream: %s, want %s", s.what, got, s.want)
		}
	}

	if code, _ := ssePost(t, ctx, urlB, path, "bob", `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`); code != http.StatusNotFound {
		t.Errorf("bob posting to alice's SSE session on B: %d, want 404", code)
	}
	if code, _ := ssePost(t, ctx, urlB, "/message?sessionId=mcp-sse-00000000000000000000000000000000", "alice",
		`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`); code != http.StatusNotFound {
		t.Errorf("an unknown SSE session on B: %d, want 404", code)
	}
	code, body := ssePost(t, ctx, urlB, path, "alice", `{"jsonrpc":"2.0","id":6,`)
	var rpc struct {
		Error struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &rpc); code != http.StatusBadRequest || err != nil || rpc.Error.Code != -32700 {
		t.Errorf("a body that is not JSON posted to B: %d %s, want 400 and a parse error", code, body)
	}

	closeStream()
	testenv.WaitFor(t, 10*time.Second, "the SSE session's shared record to go with its stream", func() bool {
		store.mu.Lock()
		defer store.mu.Unlock()
		return len(store.rows) == 0
	})
	if code, _ := ssePost(t, ctx, urlB, path, "alice", `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`); code != http.StatusNotFound {
		t.Errorf("the ended SSE session on B: %d, want 404", code)
	}
}

// TestSSESessionRecordOutlivesIdle: the record of an SSE session whose
// stream stays open is kept fresh past the time an unrefreshed one is
// found, so another replica still takes its messages, and recorded again
// when the record is lost; and a message too
// large for the Relay gets 413 there.
func TestSSESessionRecordOutlivesIdle(t *testing.T) {
	src := &source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{gateway(t, "good", upstream(t, "echo"))}}
	store := &memSessions{}
	opts := Options{Sessions: store, SessionIdleTTL: 1200 * time.Millisecond, MaxBodyBytes: 2 * maxRelayMessage} // a refresh a busy machine delays by up to 0.9 s still comes in time
	var epA, epB *Endpoint
	optsA, optsB := opts, opts
	optsA.Relay = newMemRelay(t, func() *Endpoint { return epB })
	optsB.Relay = newMemRelay(t, func() *Endpoint { return epA })
	epA, epB = New(src, &optsA), New(src, &optsB)
	urlA, urlB := serve(t, epA), serve(t, epB)

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, urlA+"/sse", nil)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stream.Body.Close() }()
	opened := time.Now()
	ev, ok := nextEvent(eventReader(t, stream))
	if !ok {
		t.Fatal("no endpoint event")
	}
	sid := strings.TrimPrefix(ev.data, "/message?sessionId=")
	testenv.WaitFor(t, 10*time.Second, "the record to be found past three times its idle time", func() bool {
		_, err := store.Session(ctx, sid, "alice", epB.hub.SSEIdle())
		if err != nil {
			t.Fatalf("the SSE session's record, %v after the stream opened: %v", time.Since(opened), err)
		}
		return time.Since(opened) > 3*epB.hub.SSEIdle()
	})
	if code, body := ssePost(t, ctx, urlB, ev.data, "alice", `{"jsonrpc":"2.0","id":1,"method":"ping"}`); code != http.StatusAccepted {
		t.Errorf("a ping posted to B: %d %s, want 202", code, body)
	}
	if err := store.DeleteSession(ctx, sid, "alice"); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "the lost record of the open stream to be recorded again", func() bool {
		_, err := store.Session(ctx, sid, "alice", epB.hub.SSEIdle())
		return err == nil
	})
	big := `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"` + strings.Repeat("x", maxRelayMessage) + `"}}`
	if code, body := ssePost(t, ctx, urlB, ev.data, "alice", big); code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "limit") {
		t.Errorf("a message over the Relay's limit posted to B: %d %s, want 413", code, body)
	}
}
