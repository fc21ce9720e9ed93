package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestSavedConfigReachesTheModel saves a default config on the Settings
// routes and checks that the user's next decision opens with its style and
// end goal, another user's does not, and the config survives a restart.
func TestSavedConfigReachesTheModel(t *testing.T) {
	t.Parallel()
	llm := newFakeLLM(t, answer("Fait."), answer("Done."), answer("Fait encore."))
	dir := t.TempDir()
	s := startService(t, serveOptions{Dir: dir, Env: llm.Env()})
	code, body := do(t, http.MethodPost, s.URL+"/user/config/alice/french", "", map[string]any{
		"name": "French", "default": true,
		"config": map[string]any{"style": "Answer in French.", "end_goal": "The user has an answer."},
	})
	wantStatus(t, "save a config", code, body, http.StatusOK)

	system := func(i int) string {
		t.Helper()
		reqs := llm.Requests()
		if len(reqs) <= i || len(reqs[i].Messages) == 0 || reqs[i].Messages[0].Role != "system" {
			t.Fatalf("request %d has no system message: %+v", i, reqs)
		}
		return reqs[i].Messages[0].Content
	}
	if res := querySSE(t, t.Context(), s.URL, "", "alice", "c1", "hello"); res.Status != http.StatusOK {
		t.Fatalf("alice's query: %d", res.Status)
	}
	if got := system(0); !strings.HasPrefix(got, "Your end goal: The user has an answer.\nWrite your messages to the user in this style: Answer in French.\n\n") {
		t.Errorf("alice's system message:\n%s", got)
	}
	if res := querySSE(t, t.Context(), s.URL, "", "bob", "c1", "hello"); res.Status != http.StatusOK {
		t.Fatalf("bob's query: %d", res.Status)
	}
	if got := system(1); strings.Contains(got, "French") || strings.Contains(got, "end goal") {
		t.Errorf("bob's system message has alice's config:\n%s", got)
	}

	s.Stop(t)
	s = startService(t, serveOptions{Dir: dir, Env: llm.Env()})
	if res := querySSE(t, t.Context(), s.URL, "", "alice", "c2", "hello again"); res.Status != http.StatusOK {
		t.Fatalf("alice's query after a restart: %d", res.Status)
	}
	if got := system(2); !strings.Contains(got, "Answer in French.") {
		t.Errorf("after a restart alice's system message:\n%s", got)
	}
}
