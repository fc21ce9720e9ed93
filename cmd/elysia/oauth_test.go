package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// signInServers is an authorization server that approves every sign-in at
// once (for --browser fetch) and an MCP server that checks its tokens,
// both on 127.0.0.1. mcpgateway's own fixture is in its test files, which
// this package cannot import.
type signInServers struct {
	as, rs *httptest.Server

	mu       sync.Mutex
	codes    map[string]string // code → PKCE challenge
	access   map[string]bool   // live access tokens
	refresh  map[string]bool   // live refresh tokens
	revoked  []string          // token_type_hint of each revocation
	issued   []string          // every token value handed out
	subjects int
}

func newSignInServers(t *testing.T) *signInServers {
	t.Helper()
	s := &signInServers{codes: map[string]string{}, access: map[string]bool{}, refresh: map[string]bool{}}
	s.as = httptest.NewServer(http.HandlerFunc(s.serveAS))
	t.Cleanup(s.as.Close)
	srv := mcpserver.NewMCPServer("protected", "1.0.0")
	srv.AddTool(mcp.NewTool("whoami"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("signed-in user"), nil
	})
	h := mcpserver.NewStreamableHTTPServer(srv)
	s.rs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			writeJSONTo(w, map[string]any{"resource": s.rs.URL + "/mcp", "authorization_servers": []string{s.as.URL}})
			return
		}
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		ok := s.access[tok]
		s.mu.Unlock()
		if !ok {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, s.rs.URL))
			http.Error(w, `{"error":"invalid_token"}`, http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.rs.Close)
	return s
}

func writeJSONTo(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (s *signInServers) serveAS(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		writeJSONTo(w, map[string]any{"issuer": s.as.URL, "authorization_endpoint": s.as.URL + "/authorize",
			"token_endpoint": s.as.URL + "/token", "registration_endpoint": s.as.URL + "/register",
			"revocation_endpoint": s.as.URL + "/revoke", "code_challenge_methods_supported": []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"none"}})
	case "/register":
		writeJSONTo(w, map[string]any{"client_id": "cli-client", "token_endpoint_auth_method": "none"})
	case "/authorize":
		q := r.URL.Query()
		s.mu.Lock()
		s.subjects++
		code := fmt.Sprintf("code-%d", s.subjects)
		s.codes[code] = q.Get("code_challenge")
		s.mu.Unlock()
		to, _ := url.Parse(q.Get("redirect_uri"))
		v := to.Query()
		v.Set("code", code)
		v.Set("state", q.Get("state"))
		to.RawQuery = v.Encode()
		http.Redirect(w, r, to.String(), http.StatusFound)
	case "/token":
		_ = r.ParseForm()
		s.mu.Lock()
		defer s.mu.Unlock()
		switch r.PostForm.Get("grant_type") {
		case "authorization_code":
			challenge, ok := s.codes[r.PostForm.Get("code")]
			delete(s.codes, r.PostForm.Get("code"))
			sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
			if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != challenge {
				http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
				return
			}
		case "refresh_token":
			if !s.refresh[r.PostForm.Get("refresh_token")] {
				http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
				return
			}
		}
		n := len(s.issued)
		at, rt := fmt.Sprintf("cli-access-secret-%d", n), fmt.Sprintf("cli-refresh-secret-%d", n)
		s.access[at], s.refresh[rt] = true, true
		s.issued = append(s.issued, at, rt)
		writeJSONTo(w, map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": 3600, "refresh_token": rt})
	case "/revoke":
		_ = r.ParseForm()
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.access, r.PostForm.Get("token"))
		delete(s.refresh, r.PostForm.Get("token"))
		s.revoked = append(s.revoked, r.PostForm.Get("token_type_hint"))
	default:
		http.NotFound(w, r)
	}
}

// TestMCPLoginCallLogout signs the CLI's user in with --browser fetch,
// calls a tool with the stored token, and signs out, which revokes the
// token at the authorization server and forgets it. No token value is
// ever printed.
func TestMCPLoginCallLogout(t *testing.T) {
	t.Parallel()
	s := newSignInServers(t)
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
	issued := append([]string(nil), s.issued...)
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
