package main

import (
	"os"
	"strings"
	"testing"
	"time"

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
