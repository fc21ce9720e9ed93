package main

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOneDefaultUser: a keyless service without ELYSIA_USER has one user
// on every surface: a browser opening / gets a conversation of it, /mcp's
// ask saves the conversation as it, and `elysia query` on the same
// database saves as it too, so each sees the others' conversations.
func TestOneDefaultUser(t *testing.T) {
	t.Parallel()
	s := startService(t, serveOptions{})

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/html")
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close() // only the redirect matters
	if loc := resp.Header.Get("Location"); !strings.HasPrefix(loc, "/tree/"+defaultUser+"/c-") {
		t.Errorf("GET / sends a browser to %q, want a conversation of %q", loc, defaultUser)
	}

	c := mcpClient(t, s.URL, "")
	if text, isErr := callText(t, c, "ask", map[string]any{"question": "list my todos", "conversation_id": "from-mcp"}); isErr {
		t.Fatalf("ask over /mcp: %s", text)
	}
	code, out, errOut := runCLI(t, s.Dir, nil, "query", "--db", filepath.Join(s.Dir, "data", "elysia.db"), "--conversation", "from-cli", "list my todos")
	if code != 0 {
		t.Fatalf("query: exit %d\n%s%s", code, out, errOut)
	}
	code, body := do(t, http.MethodGet, s.URL+"/conversations/"+defaultUser, "", nil)
	wantStatus(t, "conversations of the default user", code, body, http.StatusOK)
	got := jsonOf(body["conversations"])
	for _, id := range []string{"from-mcp", "from-cli"} {
		if !strings.Contains(got, `"`+id+`"`) {
			t.Errorf("the default user's conversations %s lack %q", got, id)
		}
	}
}
