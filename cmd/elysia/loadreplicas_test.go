package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/llm"
)

// maxLoadReplicas bounds ELYSIA_LOAD_REPLICAS.
const maxLoadReplicas = 8

// loadReplicas reads ELYSIA_LOAD_REPLICAS, how many `elysia serve`
// processes share the database (1 if unset). More than one needs a
// PostgreSQL database (ELYSIA_LOAD_DATABASE_URL) and the service in its own
// processes.
func loadReplicas(b *testing.B) int {
	b.Helper()
	v := os.Getenv("ELYSIA_LOAD_REPLICAS")
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxLoadReplicas {
		b.Fatalf("ELYSIA_LOAD_REPLICAS=%q: want a whole number from 1 to %d", v, maxLoadReplicas)
	}
	if n > 1 && loadInProcess(b) {
		b.Fatalf("ELYSIA_LOAD_REPLICAS=%d: replicas are processes; unset ELYSIA_LOAD_SERVICE=inprocess", n)
	}
	if n > 1 && !strings.HasPrefix(os.Getenv("ELYSIA_LOAD_DATABASE_URL"), "postgres") {
		b.Fatalf("ELYSIA_LOAD_REPLICAS=%d: replicas share a PostgreSQL database; set ELYSIA_LOAD_DATABASE_URL to a postgres:// URL", n)
	}
	return n
}

// startReplicas starts the service's processes (loadReplicas of them) on
// one database, each in a folder of its own under dir with its own todo
// server, and sets s.proc (the first), s.replicas, s.todoDBs and s.url
// (the first's). Only the first serves its profiles (--pprof-addr), if
// asked: the others would need addresses of their own.
func (s *loadService) startReplicas(b *testing.B, dir string, args []string) {
	b.Helper()
	for i := range loadReplicas(b) {
		rdir, todoDB, rargs := dir, s.todoDB, args
		if i > 0 {
			rdir = filepath.Join(dir, fmt.Sprintf("replica-%d", i))
			if err := os.Mkdir(rdir, 0o700); err != nil {
				b.Fatal(err)
			}
			todoDB = filepath.Join(rdir, "todos.db")
			rargs = nil
			for j := 0; j < len(args); j++ {
				if args[j] == "--pprof-addr" {
					j++ // and its value
					continue
				}
				rargs = append(rargs, args[j])
			}
		}
		p := startService(b, serveOptions{
			Dir: rdir,
			Config: fmt.Sprintf(`{"servers": {"todo": {"type": "stdio", "command": %q, "env": {"TODO_DB": %q}, "description": "A todo list."}}}`,
				testenv.TodoMCP(b), todoDB),
			Env: []string{
				llm.EnvProvider + "=" + string(llm.ProviderOpenAI),
				llm.EnvOpenAIBaseURL + "=" + s.model.srv.URL + "/v1",
				llm.EnvOpenAIKey + "=test",
				llm.EnvModel + "=scripted",
			},
			Args: rargs,
		})
		s.replicas = append(s.replicas, p)
		s.todoDBs = append(s.todoDBs, todoDB)
	}
	s.proc, s.url = s.replicas[0], s.replicas[0].URL
}

// procs returns the service's processes; none when it runs in the test
// process.
func (s *loadService) procs() []*serviceProc { return s.replicas }

// urls returns the base URL of each replica; one when the service runs in
// the test process.
func (s *loadService) urls() []string {
	if len(s.replicas) == 0 {
		return []string{s.url}
	}
	out := make([]string, len(s.replicas))
	for i, p := range s.replicas {
		out[i] = p.URL
	}
	return out
}

// loadSent is a query a client saw completed: the replica it was sent to,
// its conversation and its text.
type loadSent struct {
	replica int
	conv    string
	text    string
}

// loadCheckWorkers is how many conversations checkSaved reads at once.
const loadCheckWorkers = 8

// checkSaved reads back, through the API, every conversation a completed
// query was sent on, from the next replica after the one that answered it
// (the same one when there is one replica), and counts the queries whose
// answer is not in the saved history: the query's text as a user message
// followed by the assistant's answer. It returns that count and up to 5
// examples.
func (s *loadService) checkSaved(tb testing.TB, sent []loadSent) (int, []string) {
	tb.Helper()
	type key struct {
		conv    string
		replica int
	}
	urls := s.urls()
	groups := map[key][]loadSent{}
	for _, q := range sent {
		k := key{q.conv, (q.replica + 1) % len(urls)}
		groups[k] = append(groups[k], q)
	}
	work := make(chan key)
	var mu sync.Mutex
	unsaved := 0
	var examples []string
	var wg sync.WaitGroup
	for range loadCheckWorkers {
		wg.Go(func() {
			for k := range work {
				history, err := loadReadHistory(s.client, urls[k.replica], k.conv)
				var missing []string
				for _, q := range groups[k] {
					if err != nil {
						missing = append(missing, fmt.Sprintf("%s %q (answered by replica %d, read on %d): %v", q.conv, q.text, q.replica, k.replica, err))
					} else if !loadAnswered(history, q.text) {
						missing = append(missing, fmt.Sprintf("%s %q (answered by replica %d, read on %d): not in the %d saved messages", q.conv, q.text, q.replica, k.replica, len(history)))
					}
				}
				mu.Lock()
				unsaved += len(missing)
				examples = append(examples, missing[:min(len(missing), max(5-len(examples), 0))]...)
				mu.Unlock()
			}
		})
	}
	for k := range groups {
		work <- k
	}
	close(work)
	wg.Wait()
	return unsaved, examples
}

// loadAnswered reports whether history holds text as a user message with
// the assistant's answer after it.
func loadAnswered(history []loadMessage, text string) bool {
	for i, m := range history {
		if m.Role == "user" && m.Content == text {
			return i+1 < len(history) && history[i+1].Role == "assistant" && history[i+1].Content != ""
		}
	}
	return false
}

// loadMessage is one message of a saved conversation's history.
type loadMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// loadReadHistory reads a conversation of the load user through GET
// /conversations/:user/:conversation on base, and returns its history.
func loadReadHistory(client *http.Client, base, conv string) ([]loadMessage, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/conversations/"+loadUser+"/"+url.PathEscape(conv), nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }() // read to the end or failed: nothing to report
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	var got struct {
		Conversation struct {
			History []loadMessage `json:"history"`
		} `json:"conversation"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		return nil, fmt.Errorf("decode the conversation: %w", err)
	}
	return got.Conversation.History, nil
}

// TestLoadCheckSavedCountsMissingAnswers: the load benchmark's check counts
// a query whose text is not saved, one saved without an answer after it,
// and one on a conversation that cannot be read, and no saved one.
func TestLoadCheckSavedCountsMissingAnswers(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/conversations/"+loadUser+"/c0" {
			http.Error(w, `{"error": "not found"}`, http.StatusNotFound)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"conversation": map[string]any{"history": []loadMessage{
			{"user", "add todo 0-0"}, {"assistant", "done"}, {"user", "add todo 0-2"},
		}}})
	}))
	defer srv.Close()
	s := &loadService{url: srv.URL, client: srv.Client()}
	n, examples := s.checkSaved(t, []loadSent{
		{conv: "c0", text: "add todo 0-0"}, {conv: "c0", text: "add todo 0-1"},
		{conv: "c0", text: "add todo 0-2"}, {conv: "c1", text: "add todo 1-0"},
	})
	if n != 3 || len(examples) != 3 {
		t.Errorf("checkSaved = %d unsaved %q, want 3: 0-1 (missing), 0-2 (no answer), 1-0 (404)", n, examples)
	}
}
