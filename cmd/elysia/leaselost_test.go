package main

import (
	"context"
	"database/sql"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
)

// TestPostgresReplicasLostLockFailsQuery: a query on replica A whose
// conversation lock expires while it waits for its model (as after a
// stall longer than the lease's time to live) is taken over by a query on
// replica B; when A's model answers, A's save is refused, so A's query ends
// with an error event and no completed, and the conversation holds B's
// answer, not A's.
func TestPostgresReplicasLostLockFailsQuery(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	hold := make(chan struct{})
	llm := newFakeLLM(t, answer("First answer."),
		reply{Tool: "text_response", Args: `{"text": "A's late answer."}`, Hold: hold})
	a := startService(t, serveOptions{Env: llm.Env(), Args: []string{"--db", dsn}})
	b := startService(t, serveOptions{Env: llm.Env(), Args: []string{"--db", dsn}})
	runSSE(t, a, "alice", "c1", "first question")

	got := make(chan sseResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		got <- querySSE(t, ctx, a.URL, "", "alice", "c1", "question on A")
	}()
	testenv.WaitFor(t, 30*time.Second, "the query on A waiting for the model", func() bool { return llm.Waiting() == 1 })

	// A's lease expires, again and again (A renews it in the background),
	// until B's query is over.
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	bDone := make(chan struct{})
	expired := make(chan error, 1)
	go func() {
		for {
			_, err := db.ExecContext(t.Context(), `UPDATE conversation_locks SET expires_at = clock_timestamp() - interval '1 second'`)
			if err != nil {
				expired <- err
				return
			}
			select {
			case <-bDone:
				expired <- nil
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	llm.Push(answer("B's answer."))
	evs := runSSE(t, b, "alice", "c1", "question on B")
	close(bDone)
	if err := <-expired; err != nil {
		t.Fatalf("expire the leases: %v", err)
	}
	if got := lastText(t, evs); got != "B's answer." {
		t.Errorf("answer on B = %q", got)
	}

	close(hold)
	res := <-got
	if res.Status != http.StatusOK {
		t.Fatalf("POST /query on A: %d %v", res.Status, res.Body)
	}
	if n := len(res.Events); n == 0 || res.Events[n-1].Type != "error" {
		t.Errorf("A's query whose lock was taken over ended with %v, want an error event", types(res.Events))
	}
	for _, e := range res.Events {
		if e.Type == "completed" {
			t.Errorf("A's query whose answer was not saved was completed: %v", types(res.Events))
		}
	}

	code, body := do(t, http.MethodGet, b.URL+"/conversations/alice/c1", "", nil)
	wantStatus(t, "GET /conversations/alice/c1 on B", code, body, http.StatusOK)
	hist, _ := get(body, "conversation", "history").([]any)
	var contents []string
	for _, m := range hist {
		s, _ := get(m, "content").(string)
		contents = append(contents, s)
	}
	joined := strings.Join(contents, " | ")
	if len(hist) != 4 || !strings.Contains(joined, "B's answer.") || strings.Contains(joined, "A's late answer.") {
		t.Errorf("saved history = %s, want the first turn and B's, not A's", joined)
	}
}
