package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/elysia-go/elysia/internal/testenv"
)

// TestShutdownLetsRunningQueriesFinish sends SIGINT while a query waits for
// the model: the query still ends with its answer and completed, and the
// service then exits cleanly (the harness fails the test otherwise).
func TestShutdownLetsRunningQueriesFinish(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	llm := newFakeLLM(t, reply{Tool: "text_response", Args: `{"text": "finished after the signal"}`, Hold: hold})
	s := startService(t, serveOptions{Env: llm.Env()})

	done := make(chan sseResult, 1)
	go func() { done <- querySSE(t, t.Context(), s.URL, "", "alice", "shutdown", "hello") }()
	testenv.WaitFor(t, 30*time.Second, "the run to reach the model", func() bool { return llm.Waiting() == 1 })

	if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "the service to log that it is shutting down", func() bool {
		return strings.Contains(s.Output(), "shutting down")
	})
	if llm.Cancelled() != 0 {
		t.Fatal("the signal cancelled the running query's model call")
	}
	close(hold)

	res := <-done
	got := types(res.Events)
	if len(got) == 0 || got[len(got)-1] != "completed" {
		t.Fatalf("events after the signal = %v, want the run to end with completed", got)
	}
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		t.Fatal("the service did not exit after its last query")
	}
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
}

// TestShutdownTellsOpenStreams sends SIGTERM while two queries hang in the
// model, one over SSE and one over a WebSocket, and a second socket sits
// idle: within the grace period each query's stream gets an error event
// saying the service is shutting down, then completed, and every socket
// a close frame with status 1001 (going away); the service exits 0.
func TestShutdownTellsOpenStreams(t *testing.T) {
	t.Parallel()
	const grace = 4 * time.Second
	hold := make(chan struct{}) // never closed: the model hangs until its request is cancelled
	llm := newFakeLLM(t, reply{Tool: "text_response", Args: `{"text": "never"}`, Hold: hold},
		reply{Tool: "text_response", Args: `{"text": "never"}`, Hold: hold})
	s := startService(t, serveOptions{Env: llm.Env(), Args: []string{"--shutdown-grace", grace.String()}})

	sseDone := make(chan sseResult, 1)
	go func() { sseDone <- querySSE(t, t.Context(), s.URL, "", "alice", "sse", "hello") }()
	conn := dialWS(t, s.URL, "")
	idle := dialWS(t, s.URL, "")
	sendWS(t, conn, map[string]string{"user_id": "alice", "conversation_id": "ws", "query_id": "q-ws", "query": "hello"})
	testenv.WaitFor(t, 30*time.Second, "both runs to reach the model", func() bool { return llm.Waiting() == 2 })

	signalled := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	type wsResult struct {
		events []envelope
		close  websocket.StatusCode
		at     time.Duration
	}
	readAll := func(c *websocket.Conn) <-chan wsResult {
		out := make(chan wsResult, 1)
		go func() {
			ctx, cancel := context.WithTimeout(t.Context(), 2*grace)
			defer cancel()
			var res wsResult
			for {
				_, data, err := c.Read(ctx)
				if err != nil {
					res.close, res.at = websocket.CloseStatus(err), time.Since(signalled)
					out <- res
					return
				}
				var e envelope
				if json.Unmarshal(data, &e) == nil {
					res.events = append(res.events, e)
				}
			}
		}()
		return out
	}
	wsDone, idleDone := readAll(conn), readAll(idle)

	checkTold := func(stream string, evs []envelope) {
		t.Helper()
		got := types(evs)
		n := len(got)
		if n < 2 || got[n-2] != "error" || got[n-1] != "completed" {
			t.Errorf("%s events after SIGTERM = %v, want them to end with error, completed", stream, got)
			return
		}
		if text, _ := evs[n-2].payload(t)["text"].(string); !strings.Contains(text, "shutting down") {
			t.Errorf("%s error event says %q, want it to say the service is shutting down", stream, text)
		}
	}
	res := <-sseDone
	if at := time.Since(signalled); at > grace {
		t.Errorf("the SSE stream ended %v after SIGTERM, want within the grace period of %v", at, grace)
	}
	checkTold("SSE", res.Events)
	ws := <-wsDone
	checkTold("WebSocket", ws.events)
	for name, r := range map[string]wsResult{"the query's socket": ws, "the idle socket": <-idleDone} {
		if r.close != websocket.StatusGoingAway {
			t.Errorf("%s ended with close status %d, want %d (going away)", name, r.close, websocket.StatusGoingAway)
		}
		if r.at > grace {
			t.Errorf("%s closed %v after SIGTERM, want within the grace period of %v", name, r.at, grace)
		}
	}
	select {
	case <-s.done:
	case <-time.After(2 * grace):
		t.Fatal("the service did not exit after the grace period")
	}
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
}
