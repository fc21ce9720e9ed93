package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
)

// TestPostgresReplicasStopAnywhere: a stop sent to replica B for a query
// running on replica A stops it, as a stop sent to A would (DESIGN.md,
// Persistence: any replica takes any request); a stop for a query that
// runs nowhere is still 404.
func TestPostgresReplicasStopAnywhere(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	llm := newFakeLLM(t, reply{Tool: "text_response", Args: `{"text": "never sent"}`, Hold: make(chan struct{})})
	a := startService(t, serveOptions{Env: llm.Env(), Args: []string{"--db", dsn}})
	b := startService(t, serveOptions{Env: llm.Env(), Args: []string{"--db", dsn}})

	done := make(chan sseResult, 1)
	go func() { done <- querySSE(t, t.Context(), a.URL, "", "alice", "c1", "think for ever") }()
	testenv.WaitFor(t, 30*time.Second, "the run on A to reach the model", func() bool { return llm.Waiting() == 1 })

	code, body := do(t, http.MethodPost, b.URL+"/query/alice/c1/stop", "", map[string]any{"query_id": "q-c1"})
	if code != http.StatusOK || body["stopped"] != 1.0 {
		t.Fatalf("stop on B of A's query: %d %v, want 200 with stopped 1", code, body)
	}
	select {
	case res := <-done:
		if n := len(res.Events); n < 2 || res.Events[n-1].Type != "completed" || !strings.Contains(string(res.Events[n-2].Payload), "Stopped by the user.") {
			t.Errorf("A's stopped query ended with %v", types(res.Events))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("A's query went on after the stop sent to B")
	}

	code, body = do(t, http.MethodPost, b.URL+"/query/alice/c1/stop", "", map[string]any{"query_id": "q-c1"})
	if code != http.StatusNotFound {
		t.Errorf("stop on B of a query that ended: %d %v, want 404", code, body)
	}
}

// TestPostgresReplicasAnswerAnywhere: a server's question raised during a
// query on replica A is answered through replica B; the answer reaches the
// server at once, and a wrong user's answer or a refused form gets through
// B what A would answer.
func TestPostgresReplicasAnswerAnywhere(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	script := testenv.Everything(t)
	llm := newFakeLLM(t,
		call("mcp_everything", map[string]any{"action": "execute", "tool_name": "trigger-elicitation-request", "tool_inputs": map[string]any{}}),
		answer("thanks"))
	opts := serveOptions{Env: llm.Env(), Args: []string{"--db", dsn},
		Config: fmt.Sprintf(`{"servers": {"everything": {"command": "node", "args": [%q, "stdio"]}}}`, script)}
	a, b := startService(t, opts), startService(t, opts)

	conn := dialWS(t, a.URL, "")
	sendWS(t, conn, map[string]string{"user_id": "alice", "conversation_id": "c1", "query_id": "q1", "query": "ask me"})
	evs := readUntil(t, conn, "q1", func(e envelope) bool { return e.Type == "elicitation" })
	id, _ := evs[len(evs)-1].payload(t)["elicitation_id"].(string)
	if id == "" {
		t.Fatalf("elicitation payload = %v", evs[len(evs)-1].payload(t))
	}

	code, body := do(t, http.MethodPost, b.URL+"/elicitations/"+id, "", map[string]any{"user_id": "bob", "action": "accept", "content": map[string]any{"name": "Bob"}})
	if code != http.StatusNotFound {
		t.Errorf("bob answering alice's question through B: %d %v, want 404", code, body)
	}
	code, body = do(t, http.MethodPost, b.URL+"/elicitations/"+id, "", map[string]any{"user_id": "alice", "action": "accept", "content": map[string]any{"integer": 1000}})
	if code != http.StatusUnprocessableEntity {
		t.Errorf("an answer the form refuses, through B: %d %v, want 422", code, body)
	}
	start := time.Now()
	code, body = do(t, http.MethodPost, b.URL+"/elicitations/"+id, "", map[string]any{"user_id": "alice", "action": "accept", "content": map[string]any{"name": "Ada Lovelace"}})
	if code != http.StatusOK || body["elicitation_id"] != id {
		t.Fatalf("alice answering through B: %d %v, want 200", code, body)
	}
	evs = readUntil(t, conn, "q1", func(e envelope) bool { return e.Type == "completed" })
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the query went on %v after the answer", d)
	}
	var result string
	for _, e := range ofType(evs, "result") {
		result += string(e.Payload)
	}
	if !strings.Contains(result, "Ada Lovelace") {
		t.Errorf("the result does not carry the answer given through B: %s", result)
	}
	code, body = do(t, http.MethodPost, b.URL+"/elicitations/"+id, "", map[string]any{"user_id": "alice", "action": "decline"})
	if code != http.StatusNotFound {
		t.Errorf("answering a question that was answered: %d %v, want 404", code, body)
	}
}

// TestPostgresReplicasShareEvents: a page's event stream on replica B
// shows the conversation a query on replica A created, soon after.
func TestPostgresReplicasShareEvents(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	llm := newFakeLLM(t, answer("Hello from A."))
	a := startService(t, serveOptions{Env: llm.Env(), Args: []string{"--db", dsn}})
	b := startService(t, serveOptions{Env: llm.Env(), Args: []string{"--db", dsn}})

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.URL+"/events/alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }() // the stream is cut by cancel
	msgs := make(chan map[string]any, 16)
	go func() {
		defer close(msgs)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 4<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var m map[string]any
			if json.Unmarshal([]byte(data), &m) == nil {
				msgs <- m
			}
		}
	}()
	conversations := func(deadline time.Duration) []any {
		timer := time.NewTimer(deadline)
		defer timer.Stop()
		for {
			select {
			case m, ok := <-msgs:
				if !ok {
					t.Fatal("B's event stream ended")
				}
				if m["type"] == "conversations" {
					list, _ := get(m, "payload", "conversations").([]any)
					return list
				}
			case <-timer.C:
				return nil
			}
		}
	}
	if list := conversations(20 * time.Second); len(list) != 0 {
		t.Fatalf("first conversations message on B = %v, want none", list)
	}

	start := time.Now()
	runSSE(t, a, "alice", "c1", "first question on A")
	list := conversations(15 * time.Second)
	if len(list) != 1 || get(list[0], "conversation_id") != "c1" {
		t.Fatalf("B's event stream after A's query: conversations %v, want c1", list)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("B's page learnt of A's conversation after %v", d)
	}
}
