package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMCPLoginCallLogout signs the CLI's user in with --browser fetch,
// calls a tool with the stored token, and signs out, which revokes the
// token at the authorization server and forgets it. No token value is
// ever printed.
func TestMCPLoginCallLogout(t *testing.T) {
	t.Parallel()
	s := newOAuthFixture(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.json")
	writeFile(t, filepath.Join(dir, "mcp.json"), `{"servers": {"docs": {"type": "http", "url": "`+s.rs.URL+`/mcp", "oauth": {}}}}`)
	env := []string{"ELYSIA_TOKEN_FILE=" + tokens, "ELYSIA_USER=alice", "ELYSIA_OAUTH_BROWSER="}
	var printed strings.Builder
	run := func(env []string, args ...string) (int, string) {
		t.Helper()
		code, out, errOut := runCLI(t, dir, env, args...)
		printed.WriteString(out + errOut)
		return code, out + errOut
	}

	if code, out := run(env, "mcp", "list"); code != 0 || !strings.Contains(out, "needs_sign_in: elysia mcp login docs (as alice)") {
		t.Errorf("mcp list before login: exit %d\n%s", code, out)
	}
	if code, out := run(env, "mcp", "call", "docs", "whoami"); code != 1 || !strings.Contains(out, `user "alice" must sign in to server "docs"`) {
		t.Errorf("mcp call before login: exit %d\n%s", code, out)
	}
	if code, out := run(env, "mcp", "login", "docs", "--browser", "fetch"); code != 0 || !strings.Contains(out, "signed in to docs as alice") {
		t.Fatalf("mcp login: exit %d\n%s", code, out)
	}
	if fi, err := os.Stat(tokens); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v, %v; want mode 0600", fi, err)
	}
	s.mu.Lock()
	signedIn := append(append([]string(nil), s.issuedAccess...), s.issuedRefresh...)
	s.mu.Unlock()
	data, err := os.ReadFile(tokens)
	if err != nil || len(signedIn) == 0 {
		t.Fatalf("token file after login: %v, %d tokens issued", err, len(signedIn))
	}
	for _, tok := range signedIn {
		if strings.Contains(string(data), tok) {
			t.Errorf("the token file holds a token in clear")
		}
	}
	if code, out := run(env, "mcp", "call", "docs", "whoami"); code != 0 || !strings.Contains(out, "signed-in user") {
		t.Errorf("mcp call after login: exit %d\n%s", code, out)
	}
	if code, out := run(env, "mcp", "list"); code != 0 || strings.Contains(out, "needs_sign_in") {
		t.Errorf("mcp list after login: exit %d\n%s", code, out)
	}
	bob := []string{"ELYSIA_TOKEN_FILE=" + tokens, "ELYSIA_USER=bob", "ELYSIA_OAUTH_BROWSER="}
	if code, out := run(bob, "mcp", "list"); code != 0 || !strings.Contains(out, "needs_sign_in: elysia mcp login docs (as bob)") {
		t.Errorf("mcp list as bob: exit %d\n%s", code, out)
	}

	if code, out := run(env, "mcp", "logout", "docs"); code != 0 || !strings.Contains(out, "signed out of docs as alice") {
		t.Fatalf("mcp logout: exit %d\n%s", code, out)
	}
	s.mu.Lock()
	revoked := strings.Join(s.revoked, ",")
	live := len(s.access) + len(s.refresh)
	issued := append(append([]string(nil), s.issuedAccess...), s.issuedRefresh...)
	s.mu.Unlock()
	if revoked != "refresh_token,access_token" || live != 0 {
		t.Errorf("revocations = %q, %d tokens still live; want the refresh then the access token revoked", revoked, live)
	}
	if data, err := os.ReadFile(tokens); err != nil || strings.Contains(string(data), "cli-") {
		t.Errorf("token file after logout: %s, %v; want no token", data, err)
	}
	if code, out := run(env, "mcp", "call", "docs", "whoami"); code != 1 || !strings.Contains(out, "must sign in") {
		t.Errorf("mcp call after logout: exit %d\n%s", code, out)
	}
	for _, tok := range issued {
		if strings.Contains(printed.String(), tok) {
			t.Errorf("the CLI printed a token")
		}
	}
}
