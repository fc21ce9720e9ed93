package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, to make a schema per test

	"github.com/elysia-go/elysia/internal/testenv"
)

// historyOf returns the conversation_history the model saw in a request.
func historyOf(tb testing.TB, r llmRequest) []any {
	tb.Helper()
	h, _ := r.Context(tb)["conversation_history"].([]any)
	return h
}

// TestRestartKeepsConversations stops the service and starts a new one on
// the same folder (the same ./data/elysia.db): conversations, their history
// and event log, and tree changes come back, with the gateways of mcp.json.
func TestRestartKeepsConversations(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	llm := newFakeLLM(t, todoScript()...)
	s1 := startService(t, serveOptions{Dir: dir, Env: llm.Env()})
	runSSE(t, s1, "alice", "c1", "add buy milk to my todos")
	code, body := do(t, http.MethodPost, s1.URL+"/tools/alice/add_branch", "", map[string]any{
		"conversation_id": "c1", "id": "saved_branch", "description": "Kept across restarts", "instruction": "Choose."})
	wantStatus(t, "add_branch", code, body, http.StatusOK)
	s1.Stop(t)

	s2 := startService(t, serveOptions{Dir: dir, Env: llm.Env()})
	code, body = do(t, http.MethodGet, s2.URL+"/conversations/alice", "", nil)
	wantStatus(t, "GET /conversations/alice after a restart", code, body, http.StatusOK)
	list, _ := body["conversations"].([]any)
	if len(list) != 1 || get(list[0], "conversation_id") != "c1" || get(list[0], "title") != "add buy milk to my todos" {
		t.Fatalf("conversations after a restart = %v", list)
	}

	code, body = do(t, http.MethodGet, s2.URL+"/conversations/alice/c1", "", nil)
	wantStatus(t, "GET /conversations/alice/c1 after a restart", code, body, http.StatusOK)
	conv, _ := body["conversation"].(map[string]any)
	hist, _ := conv["history"].([]any)
	if len(hist) != 2 || get(hist[0], "content") != "add buy milk to my todos" || get(hist[1], "content") != "Added 'Buy milk'." {
		t.Errorf("history after a restart = %v", conv["history"])
	}
	events, _ := conv["events"].([]any)
	var evTypes []any
	for _, e := range events {
		evTypes = append(evTypes, get(e, "type"))
	}
	if len(events) < 5 || evTypes[len(evTypes)-1] != "completed" || get(events[0], "query_id") != "q-c1" {
		t.Errorf("event log after a restart = %v", evTypes)
	}
	for _, id := range []string{"mcp_todo", "saved_branch"} {
		if get(conv, "tree", "options", id, "id") != id {
			t.Errorf("tree after a restart lacks %s: %v", id, get(conv, "tree", "options"))
		}
	}
	code, body = do(t, http.MethodGet, s2.URL+"/tree/alice/c1", "", nil)
	wantStatus(t, "GET /tree after a restart", code, body, http.StatusOK)
	if get(body, "tree", "options", "saved_branch", "branch") != true || get(body, "tree", "options", "mcp_todo", "id") != "mcp_todo" {
		t.Errorf("GET /tree after a restart: %v", get(body, "tree", "options"))
	}

	// The conversation continues: the model sees the first turn.
	llm.Push(answer("You asked me to add milk."))
	before := len(llm.Requests())
	evs := runSSE(t, s2, "alice", "c1", "what did I ask?")
	if hasType(evs, "title") {
		t.Errorf("a continued conversation got a new title event")
	}
	reqs := llm.Requests()
	if len(reqs) != before+1 {
		t.Fatalf("%d model requests for the continued query, want 1", len(reqs)-before)
	}
	h := historyOf(t, reqs[before])
	if len(h) != 2 || get(h[0], "content") != "add buy milk to my todos" {
		t.Errorf("conversation_history after a restart = %v", h)
	}
	if got := listTodos(t, s2.URL, ""); !strings.Contains(got, "Buy milk") {
		t.Errorf("the todo of the first service is gone: %s", got)
	}
}

// TestPostgresReplicasShareConversations runs two services on one
// PostgreSQL database: a query on A is read back on B, and a query on B
// continues the same conversation.
func TestPostgresReplicasShareConversations(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	llm := newFakeLLM(t, answer("Hello from A."))
	a := startService(t, serveOptions{Env: llm.Env(), Args: []string{"--db", dsn}})
	b := startService(t, serveOptions{Env: llm.Env(), Args: []string{"--db", dsn}})

	runSSE(t, a, "alice", "c1", "first question on A")

	code, body := do(t, http.MethodGet, b.URL+"/conversations/alice/c1", "", nil)
	wantStatus(t, "GET /conversations/alice/c1 on B", code, body, http.StatusOK)
	hist, _ := get(body, "conversation", "history").([]any)
	if len(hist) != 2 || get(hist[0], "content") != "first question on A" || get(hist[1], "content") != "Hello from A." {
		t.Errorf("history read on B = %v", get(body, "conversation", "history"))
	}
	if ev, _ := get(body, "conversation", "events").([]any); len(ev) == 0 || get(ev[len(ev)-1], "type") != "completed" {
		t.Errorf("event log read on B = %v", get(body, "conversation", "events"))
	}
	code, body = do(t, http.MethodGet, b.URL+"/conversations/alice", "", nil)
	if list, _ := body["conversations"].([]any); code != http.StatusOK || len(list) != 1 || get(list[0], "title") != "first question on A" {
		t.Errorf("conversations listed on B: %d %v", code, body)
	}

	llm.Push(answer("Hello from B."))
	evs := runSSE(t, b, "alice", "c1", "second question on B")
	if got := lastText(t, evs); got != "Hello from B." {
		t.Errorf("answer on B = %q", got)
	}
	reqs := llm.Requests()
	h := historyOf(t, reqs[len(reqs)-1])
	if len(h) != 2 || get(h[0], "content") != "first question on A" || get(h[1], "content") != "Hello from A." {
		t.Errorf("B's model saw conversation_history %v, want A's turn", h)
	}

	// And A sees B's turn.
	code, body = do(t, http.MethodGet, a.URL+"/conversations/alice/c1", "", nil)
	if hist, _ := get(body, "conversation", "history").([]any); code != http.StatusOK || len(hist) != 4 {
		t.Errorf("history read back on A: %d %v", code, get(body, "conversation", "history"))
	}
}

// TestPostgresReplicasShareSignIns starts alice's web sign-in on replica A
// and lets the authorization server's redirect land on replica B (as a
// load balancer without sticky sessions would): B finishes it from the
// shared, sealed store, and both replicas then serve alice signed in. The
// same callback replayed is refused.
func TestPostgresReplicasShareSignIns(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	f := newOAuthFixture(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	opts := serveOptions{
		Env:    []string{"ELYSIA_SECRET_KEY=" + base64.StdEncoding.EncodeToString(key)},
		Args:   []string{"--db", dsn},
		Config: fmt.Sprintf(`{"servers": {"secure": {"type": "http", "url": %q, "oauth": {}}}}`, f.rs.URL+"/mcp"),
	}
	a, b := startService(t, opts), startService(t, opts)

	code, hdr, raw := rawDo(t, http.MethodPost, a.URL+"/oauth/start/secure?user=alice", "", nil, map[string]string{"Accept": "application/json"})
	var started struct{ URL string }
	if err := json.Unmarshal(raw, &started); code != http.StatusOK || err != nil || started.URL == "" {
		t.Fatalf("start on A: %d %s", code, raw)
	}
	// The browser that started the sign-in brings its cookie back to
	// whichever replica the callback reaches.
	cookie := strings.SplitN(hdr.Get("Set-Cookie"), ";", 2)[0]
	if !strings.HasPrefix(cookie, "__Host-elysia_signin_") {
		t.Fatalf("the start set no sign-in cookie: %q", hdr.Get("Set-Cookie"))
	}
	noFollow := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(started.URL)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	callback, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(callback.String(), a.URL+"/oauth/callback/secure?") {
		t.Fatalf("the authorization server redirected to %q, want A's callback", resp.Header.Get("Location"))
	}
	onB := strings.Replace(callback.String(), a.URL, b.URL, 1)
	if code, _, raw := rawDo(t, http.MethodGet, onB, "", nil, map[string]string{"Cookie": cookie}); code != http.StatusOK {
		t.Fatalf("callback on B: %d %s", code, raw)
	}
	for name, s := range map[string]*serviceProc{"A": a, "B": b} {
		code, body := do(t, http.MethodGet, s.URL+"/api/servers?user=alice", "", nil)
		state := any(nil)
		if servers, _ := body["servers"].([]any); len(servers) == 1 {
			state = get(servers[0], "state")
		}
		if code != http.StatusOK || state == nil || state == "needs_sign_in" {
			t.Errorf("alice's state on %s after the sign-in: %d %v", name, code, state)
		}
	}
	if code, _, _ := rawDo(t, http.MethodGet, onB, "", nil, map[string]string{"Cookie": cookie}); code == http.StatusOK {
		t.Errorf("a replayed callback was accepted")
	}
}
