package mcpgateway

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
	"github.com/elysia-go/elysia/tools"
)

// keyServer is an MCP server that takes API keys in the Authorization
// header: whoami answers whose key it is, and an unknown key gets a 403
// that quotes it, as careless servers do.
func keyServer(t *testing.T, keys map[string]string) *httptest.Server {
	t.Helper()
	srv := mcpserver.NewMCPServer("keys", "1.0.0")
	srv.AddTool(mcp.NewTool("whoami"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		who, _ := ctx.Value(subjectKey{}).(string)
		return mcp.NewToolResultText(who), nil
	})
	h := mcpserver.NewStreamableHTTPServer(srv, mcpserver.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
		return context.WithValue(ctx, subjectKey{}, keys[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")])
	}))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if _, ok := keys[key]; !ok {
			http.Error(w, "unknown API key "+key, http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts
}

func TestUserSecretsInHeaders(t *testing.T) {
	t.Parallel()
	ts := keyServer(t, map[string]string{"key-alice-0001": "alice", "key-alice-0002": "alice, new key", "key-dave-00001": "dave"})
	cfg := parseOK(t, `{"servers": {"api": {"type": "http", "url": "`+ts.URL+`",
		"headers": {"Authorization": "Bearer ${user:API_KEY}"}}}}`, nil).Servers[0]
	secrets := &memoryUserSecrets{}
	secrets.Set("alice", "API_KEY", "key-alice-0001")
	secrets.Set("carol", "API_KEY", "key-carol-bad1")
	secrets.Set("dave", "API_KEY", "key-dave-00001")
	logs := &testenv.SyncBuffer{}
	g := newGateway(t, cfg, &Options{UserSecrets: secrets, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})

	if got, err := whoami(t, g, "alice"); err != nil || got != "alice" {
		t.Fatalf("alice: %q, %v", got, err)
	}
	if got, err := whoami(t, g, "dave"); err != nil || got != "dave" {
		t.Fatalf("dave: %q, %v", got, err)
	}

	// Bob has set nothing: told what to set, like a missing sign-in.
	_, err := whoami(t, g, "bob")
	if !errors.Is(err, errSecretRequired) || !errors.Is(err, mcpauth.ErrSignInRequired) ||
		!strings.Contains(err.Error(), "PUT /users/bob/secrets/API_KEY") {
		t.Errorf("bob: %v, want a secret-required error naming PUT /users/bob/secrets/API_KEY", err)
	}
	st := g.StatusFor(t.Context(), "bob")
	if st.State != session.StateNeedsSignIn || !slices.Equal(st.MissingSecrets, []string{"API_KEY"}) {
		t.Errorf("bob's status = %s %v, want needs_sign_in [API_KEY]", st.State, st.MissingSecrets)
	}
	res, err := g.Run(t.Context(), tools.Call{UserID: "bob", Args: map[string]any{"action": "execute", "tool_name": "whoami"}}, tools.Discard)
	if err != nil || !res.IsError || !strings.Contains(res.Feedback, "API_KEY") {
		t.Errorf("Run for bob = %+v, %v; want a self-healing message naming API_KEY", res, err)
	}
	if st := g.StatusFor(t.Context(), "alice"); st.State != session.StateConnected || st.MissingSecrets != nil {
		t.Errorf("alice's status = %s %v, want connected", st.State, st.MissingSecrets)
	}

	// Carol's key is wrong, and the server quotes it: whatever carries
	// it up, her session's mask and the gateway's hide it.
	_, err = whoami(t, g, "carol")
	if err == nil || strings.Contains(err.Error(), "key-carol-bad1") {
		t.Errorf("carol: %v, want an error without her key", err)
	}
	quoted := "403: unknown API key key-carol-bad1 (Bearer key-carol-bad1)"
	g.mu.Lock()
	child := g.users["carol"].v
	g.mu.Unlock()
	carolMask := func(s string) string { return g.maskFor(WithUser(t.Context(), "carol"), s) }
	for name, mask := range map[string]func(string) string{"the gateway, for carol": carolMask, "carol's session": child.masker} {
		if got := mask(quoted); got != "403: unknown API key *** (***)" {
			t.Errorf("%s masks %q as %q", name, quoted, got)
		}
	}
	res, _ = g.Run(t.Context(), tools.Call{UserID: "carol", Args: map[string]any{"action": "execute", "tool_name": "whoami"}}, tools.Discard)
	if b, _ := json.Marshal(res); strings.Contains(string(b), "key-carol-bad1") {
		t.Errorf("carol's result carries her key: %s", b)
	}
	if b, _ := json.Marshal(g.StatusFor(t.Context(), "carol")); strings.Contains(string(b), "key-carol-bad1") {
		t.Errorf("carol's status carries her key: %s", b)
	}

	// A changed secret is in force at the next call; a deleted one is
	// missing again.
	secrets.Set("alice", "API_KEY", "key-alice-0002")
	if got, err := whoami(t, g, "alice"); err != nil || got != "alice, new key" {
		t.Errorf("alice after a new key: %q, %v", got, err)
	}
	secrets.Delete("alice", "API_KEY")
	if _, err := whoami(t, g, "alice"); !errors.Is(err, errSecretRequired) {
		t.Errorf("alice after deleting her key: %v, want ErrSecretRequired", err)
	}
	if got, err := whoami(t, g, "dave"); err != nil || got != "dave" {
		t.Errorf("dave after alice's changes: %q, %v", got, err)
	}

	for _, v := range []string{"key-alice-0001", "key-alice-0002", "key-carol-bad1", "key-dave-00001"} {
		if strings.Contains(logs.String(), v) {
			t.Errorf("the log carries %s", v)
		}
	}
	if d := cfg.Display(); d.Headers["Authorization"] != "***" {
		t.Errorf("displayed header = %q", d.Headers["Authorization"])
	}
	if got := cfg.UserSecretNames(); !slices.Equal(got, []string{"API_KEY"}) {
		t.Errorf("UserSecretNames = %v", got)
	}
}

// TestUserSecretsInStdioEnv gives each user a todo-mcp process of their
// own, with their own database from ${user:db}, capped at MaxUsers.
func TestUserSecretsInStdioEnv(t *testing.T) {
	t.Parallel()
	testenv.Integration(t)
	dir := t.TempDir()
	cfg := parseOK(t, `{"servers": {"todo": {"command": "`+testenv.TodoMCP(t)+`", "env": {"TODO_DB": "${user:db}"}}}}`, nil).Servers[0]
	secrets := &memoryUserSecrets{}
	for _, u := range []string{"alice", "bob", "carol"} {
		secrets.Set(u, "db", filepath.Join(dir, u+".db"))
	}
	var mu sync.Mutex
	var pids []int
	g := newGateway(t, cfg, &Options{UserSecrets: secrets, MaxUsers: 2, OnProcessStart: func(pid int) {
		mu.Lock()
		pids = append(pids, pid)
		mu.Unlock()
	}})
	exec := func(user, tool string, in map[string]any) string {
		t.Helper()
		res, err := g.Execute(WithUser(t.Context(), user), tool, in)
		if err != nil || res.IsError {
			t.Fatalf("%s %s: %v %+v", user, tool, err, res)
		}
		return res.Text()
	}
	exec("alice", "create_todo", map[string]any{"title": "Alice's milk"})
	exec("bob", "create_todo", map[string]any{"title": "Bob's bread"})
	for user, want := range map[string]string{"alice": "Alice's milk", "bob": "Bob's bread"} {
		got := exec(user, "list_todos", nil)
		if !strings.Contains(got, want) || strings.Contains(got, map[string]string{"alice": "Bob's", "bob": "Alice's"}[user]) {
			t.Errorf("%s's todos: %s", user, got)
		}
	}
	alicePID := g.StatusFor(t.Context(), "alice").PID
	if bobPID := g.StatusFor(t.Context(), "bob").PID; alicePID == 0 || alicePID == bobPID {
		t.Errorf("pids: alice %d, bob %d; want a process each", alicePID, bobPID)
	}
	// Bob is used last, so alice is the least recently used (the map above
	// is walked in random order); carol's process makes three and alice's
	// ends. Asking StatusFor about alice now would make her a child again,
	// so the test watches her process instead.
	exec("bob", "list_todos", nil)
	exec("carol", "list_todos", nil)
	testenv.WaitFor(t, 10*time.Second, "alice's process to end", func() bool { return processGone(alicePID) })
	mu.Lock()
	got := len(pids)
	mu.Unlock()
	if got != 3 {
		t.Errorf("processes started = %d, want 3", got)
	}
	secrets.Delete("bob", "db")
	_, err := g.Execute(WithUser(t.Context(), "bob"), "list_todos", nil)
	if want := "PUT /users/bob/secrets/db"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("bob without db: %v, want %q", err, want)
	}
	if diff := cmp.Diff([]string{"db"}, g.StatusFor(t.Context(), "bob").MissingSecrets); diff != "" {
		t.Errorf("bob's missing secrets (-want +got):\n%s", diff)
	}
}

// TestUserSecretsMaskedPerUser: what a user is shown is masked with the
// server's secrets and that user's own, never another user's: bob, whose
// error happens to quote alice's key (he sent it as a guess), sees it as he
// sent it, so the mask cannot confirm his guess; each user's own key is
// masked in their own errors; a secret of the config is masked for all.
func TestUserSecretsMaskedPerUser(t *testing.T) {
	t.Parallel()
	srv := mcpserver.NewMCPServer("echo", "1.0.0")
	srv.AddTool(mcp.NewTool("fail", mcp.WithString("text")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("cannot do " + req.GetString("text", ""))
	})
	ts := httptest.NewServer(mcpserver.NewStreamableHTTPServer(srv))
	t.Cleanup(ts.Close)
	cfg := parseOK(t, `{"servers": {"api": {"type": "http", "url": "`+ts.URL+`/mcp",
		"headers": {"Authorization": "Bearer ${user:API_KEY}", "X-Team": "team-config-0001"}}}}`, nil).Servers[0]
	secrets := &memoryUserSecrets{}
	secrets.Set("alice", "API_KEY", "key-alice-0001")
	secrets.Set("bob", "API_KEY", "key-bob-000001")
	g := newGateway(t, cfg, &Options{UserSecrets: secrets})
	// shown returns everything user is shown of a failed call with text,
	// through the agent's path (Run) and the API's (Execute).
	shown := func(user, text string) string {
		t.Helper()
		res, err := g.Run(t.Context(), tools.Call{UserID: user, Args: map[string]any{
			"action": "execute", "tool_name": "fail", "tool_inputs": map[string]any{"text": text}}}, tools.Discard)
		if err != nil {
			t.Fatalf("%s: %v", user, err)
		}
		b, _ := json.Marshal(res)
		out, err := g.Execute(WithUser(t.Context(), user), "fail", map[string]any{"text": text})
		if err == nil {
			t.Fatalf("%s: %+v, want an error", user, out)
		}
		return string(b) + "\n" + err.Error()
	}
	// Both users have sessions, so each one's secrets are known to g.
	for _, user := range []string{"alice", "bob"} {
		if got := shown(user, "warm-up"); !strings.Contains(got, "cannot do warm-up") {
			t.Fatalf("%s's error: %s", user, got)
		}
	}
	for _, tc := range []struct {
		user, text string
		masked     bool
	}{
		{"bob", "key-alice-0001", false},
		{"alice", "key-bob-000001", false},
		{"alice", "key-alice-0001", true},
		{"bob", "key-bob-000001", true},
		{"alice", "team-config-0001", true},
		{"bob", "team-config-0001", true},
	} {
		got := shown(tc.user, tc.text)
		if tc.masked && (strings.Contains(got, tc.text) || !strings.Contains(got, "cannot do ***")) {
			t.Errorf("%s sent %s: shown %s; want it masked", tc.user, tc.text, got)
		}
		if !tc.masked && strings.Count(got, "cannot do "+tc.text) != 2 {
			t.Errorf("%s sent %s: shown %s; want it as sent, in both results", tc.user, tc.text, got)
		}
	}
}
