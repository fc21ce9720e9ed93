package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// headerServer is an MCP server on 127.0.0.1 that answers 401 unless the
// request's Authorization is one of tokens; its tool whoami answers with
// the name the token belongs to.
func headerServer(t *testing.T, tokens map[string]string) *httptest.Server {
	t.Helper()
	srv := mcpserver.NewMCPServer("secrets", "1.0.0")
	srv.AddTool(mcp.NewTool("whoami"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		who, _ := ctx.Value(whoKey{}).(string)
		return mcp.NewToolResultText("you are " + who), nil
	})
	h := mcpserver.NewStreamableHTTPServer(srv, mcpserver.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
		return context.WithValue(ctx, whoKey{}, tokens[r.Header.Get("Authorization")])
	}))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := tokens[r.Header.Get("Authorization")]; !ok {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts
}

type whoKey struct{}

// TestUserSecretsReachTheirServer: a header built from ${user:TOKEN}
// carries each user's own secret, set with PUT /users/:user/secrets/:name
// and never readable back; a user without one is told which to set; the
// value is in no response and no log line.
func TestUserSecretsReachTheirServer(t *testing.T) {
	t.Parallel()
	const aliceSecret = "alice-s3cret-value-0001"
	mcpSrv := headerServer(t, map[string]string{"Bearer " + aliceSecret: "alice"})
	keys := "ELYSIA_API_KEYS=ka:alice,kb:bob"
	s := startService(t, serveOptions{Env: []string{keys},
		Config: fmt.Sprintf(`{"servers": {"mine": {"type": "http", "url": %q, "headers": {"Authorization": "Bearer ${user:TOKEN}"}}}}`, mcpSrv.URL+"/mcp")})

	code, body := do(t, http.MethodPut, s.URL+"/users/alice/secrets/TOKEN", "ka", map[string]any{"value": aliceSecret})
	if code >= 300 {
		t.Fatalf("PUT secret: %d %v", code, body)
	}
	code, body = do(t, http.MethodPut, s.URL+"/users/alice/secrets/TOKEN", "kb", map[string]any{"value": "bob's"})
	if code != http.StatusForbidden {
		t.Errorf("bob setting alice's secret: %d %v, want 403", code, body)
	}

	code, body = do(t, http.MethodPost, s.URL+"/api/servers/mine/execute", "ka", map[string]any{"tool_name": "whoami"})
	if code != http.StatusOK || !strings.Contains(fmt.Sprint(body["result"]), "you are alice") {
		t.Fatalf("alice's call: %d %v", code, body)
	}
	code, body = do(t, http.MethodPost, s.URL+"/api/servers/mine/execute", "kb", map[string]any{"tool_name": "whoami"})
	if code < 400 || !strings.Contains(fmt.Sprint(body["error"]), "TOKEN") {
		t.Errorf("bob's call without a secret: %d %v, want an error naming the secret to set", code, body)
	}

	_, _, raw := rawDo(t, http.MethodGet, s.URL+"/api/servers", "ka", nil, nil)
	for what, text := range map[string]string{"GET /api/servers": string(raw), "the log": s.Output()} {
		if strings.Contains(text, aliceSecret) {
			t.Errorf("%s holds alice's secret", what)
		}
	}
}

// TestUserSecretsCapped: a user keeps at most 100 secrets of at most 16
// KiB each; beyond them PUT answers 4xx naming the cap, and the secrets
// kept stay (the one replaced at the cap included).
func TestUserSecretsCapped(t *testing.T) {
	t.Parallel()
	s := startService(t, serveOptions{Env: []string{"ELYSIA_API_KEYS=ka:alice,kb:bob"}})
	put := func(key, user, name, value string) (int, map[string]any) {
		return do(t, http.MethodPut, s.URL+"/users/"+user+"/secrets/"+name, key, map[string]any{"value": value})
	}
	for i := range 100 {
		if code, body := put("ka", "alice", fmt.Sprintf("S%d", i), "v"); code != http.StatusNoContent {
			t.Fatalf("secret %d: %d %v", i, code, body)
		}
	}
	if code, body := put("ka", "alice", "ONE_MORE", "v"); code != http.StatusConflict || !strings.Contains(fmt.Sprint(body["error"]), "100") {
		t.Errorf("secret 101: %d %v, want 409 naming the cap", code, body)
	}
	if code, body := put("ka", "alice", "S5", "replaced"); code != http.StatusNoContent {
		t.Errorf("replacing a kept secret at the cap: %d %v", code, body)
	}
	if code, body := put("kb", "bob", "BIG", strings.Repeat("x", 16<<10+1)); code != http.StatusRequestEntityTooLarge || !strings.Contains(fmt.Sprint(body["error"]), "16 KiB") {
		t.Errorf("a value over 16 KiB: %d %v, want 413 naming the cap", code, body)
	}
	if code, body := put("kb", "bob", "S0", "v"); code != http.StatusNoContent {
		t.Errorf("bob's first secret: %d %v", code, body)
	}
}
