package mcpendpoint

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// kindRelay is a memRelay that tells saw the kind of each message it
// carries.
type kindRelay struct {
	*memRelay
	saw chan string
}

func (r kindRelay) Publish(msg []byte) error {
	var m struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(msg, &m)
	select {
	case r.saw <- m.Kind:
	default: // nobody is looking
	}
	return r.memRelay.Publish(msg)
}

// samplingPair is two endpoints sharing sessions, with the poet's haiku
// tool (samplingUpstream), and a 2025-11-25 session of alice's that
// declares sampling, initialized on A and known to B; fromA tells the
// kinds of A's messages to B.
func samplingPair(t *testing.T, ctx context.Context) (urlA, urlB, sid string, fromA chan string) {
	t.Helper()
	// A call_timeout longer than sampleTakenWait, as an operator's is
	// (60 s by default): the wait for a GET stream ends first.
	poet := mcpgateway.New(mcpconfig.ServerConfig{Name: "poet", Transport: mcpconfig.TransportHTTP, URL: samplingUpstream(t), Enabled: true,
		ConnectTimeout: 5 * time.Second, CallTimeout: 25 * time.Second}, nil)
	t.Cleanup(func() { _ = poet.Close() })
	src := &source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{poet}}
	store := &memSessions{}
	var epA, epB *Endpoint
	fromA = make(chan string, 64)
	epA = New(src, &Options{Sessions: store, Relay: kindRelay{newMemRelay(t, func() *Endpoint { return epB }), fromA}})
	epB = New(src, &Options{Sessions: store, Relay: newMemRelay(t, func() *Endpoint { return epA })})
	urlA, urlB = serve(t, epA), serve(t, epB)

	resp := mcpRequest(t, ctx, http.MethodPost, urlA, "alice", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":`+
		`{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	sid = resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize on A: %d, session %q", resp.StatusCode, sid)
	}
	for _, url := range []string{urlA, urlB} {
		resp := mcpRequest(t, ctx, http.MethodPost, url, "alice", sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		_ = resp.Body.Close()
		resp = mcpRequest(t, ctx, http.MethodPost, url, "alice", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("tools/list on %s: %d", url, resp.StatusCode)
		}
	}
	return urlA, urlB, sid, fromA
}

// callHaiku calls the poet's haiku on url in session sid and sends what
// the call's stream said on the returned channel.
func callHaiku(t *testing.T, ctx context.Context, url, sid string) <-chan string {
	t.Helper()
	out := make(chan string, 1)
	resp := mcpRequest(t, ctx, http.MethodPost, url, "alice", sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"poet__haiku","arguments":{}}}`)
	go func() {
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		out <- string(b)
	}()
	return out
}

// waitKind waits for a message of kind on saw.
func waitKind(t *testing.T, ctx context.Context, saw <-chan string, kind string) {
	t.Helper()
	for {
		select {
		case k := <-saw:
			if k == kind {
				return
			}
		case <-ctx.Done():
			t.Fatalf("no %s message", kind)
		}
	}
}

// TestSharedSamplingWaitsForTheStream: a call on A asks for sampling
// before the client's GET stream is open anywhere (the TypeScript SDK
// opens it as it sends its first requests, and a balancer sends it where
// it likes); the stream then opens on B, or on A. B, which had no stream
// when A's request came, puts it to the client once it opens; A, when its
// own opens and no replica took the request, puts it there. Either way
// the client's answer, sent to A, answers the call.
func TestSharedSamplingWaitsForTheStream(t *testing.T) {
	for _, on := range []string{"B", "A"} {
		t.Run("stream on "+on, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			urlA, urlB, sid, fromA := samplingPair(t, ctx)
			call := callHaiku(t, ctx, urlA, sid)
			waitKind(t, ctx, fromA, "mcp_sample") // A relayed it: no stream anywhere yet

			url := urlB
			if on == "A" {
				url = urlA
			}
			stream := mcpRequest(t, ctx, http.MethodGet, url, "alice", sid, "")
			if stream.StatusCode != http.StatusOK {
				t.Fatalf("GET stream on %s: %d", on, stream.StatusCode)
			}
			defer func() { _ = stream.Body.Close() }()
			var id json.RawMessage
			sc := bufio.NewScanner(stream.Body)
			for id == nil && sc.Scan() {
				line, ok := strings.CutPrefix(sc.Text(), "data: ")
				var m struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				if ok && json.Unmarshal([]byte(line), &m) == nil && m.Method == "sampling/createMessage" {
					id = m.ID
				}
			}
			if id == nil {
				t.Fatalf("no sampling request on %s's GET stream (%v)", on, sc.Err())
			}
			answer := `{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"role":"assistant","model":"m","content":{"type":"text","text":"the client's haiku"}}}`
			resp := mcpRequest(t, ctx, http.MethodPost, urlA, "alice", sid, answer)
			_ = resp.Body.Close()
			select {
			case got := <-call:
				if !strings.Contains(got, "wrote: the client's haiku") {
					t.Errorf("the call said %s, want the client's answer", got)
				}
			case <-ctx.Done():
				t.Fatal("the call did not end after the client answered")
			}
		})
	}
}

// TestSharedSamplingWithoutAStream: a call that asks for sampling of a
// client that never opens its GET stream fails within sampleTakenWait,
// saying why, instead of waiting for a stream that never comes.
func TestSharedSamplingWithoutAStream(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	urlA, _, sid, _ := samplingPair(t, ctx)
	select {
	case got := <-callHaiku(t, ctx, urlA, sid):
		if !strings.Contains(got, "no GET stream open") || !bytes.Contains([]byte(got), []byte(`"isError":true`)) {
			t.Errorf("the call said %s, want an error result saying the client has no GET stream", got)
		}
	case <-ctx.Done():
		t.Fatal("the call still waits for a GET stream that never comes")
	}
}
