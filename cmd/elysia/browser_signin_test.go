package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// oauthFixture is an authorization server that approves every sign-in at
// once (checking PKCE and the resource), and an MCP server, both on
// 127.0.0.1, that answers 401 without one of its tokens. Its one tool,
// whoami, answers with the subject the token was issued to.
type oauthFixture struct {
	as, rs *httptest.Server

	mu     sync.Mutex           // guards the maps below and n
	codes  map[string][2]string // code → challenge, subject
	issued map[string]string    // access token → subject
	n      int
}

type subjectCtxKey struct{}

func newOAuthFixture(t *testing.T) *oauthFixture {
	t.Helper()
	f := &oauthFixture{codes: map[string][2]string{}, issued: map[string]string{}}
	f.as = httptest.NewServer(http.HandlerFunc(f.serveAS))
	t.Cleanup(f.as.Close)
	srv := mcpserver.NewMCPServer("secure", "1.0.0")
	srv.AddTool(mcp.NewTool("whoami", mcp.WithDescription("Say whom the token is for.")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			sub, _ := ctx.Value(subjectCtxKey{}).(string)
			return mcp.NewToolResultText("you are " + sub), nil
		})
	h := mcpserver.NewStreamableHTTPServer(srv, mcpserver.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
		return context.WithValue(ctx, subjectCtxKey{}, f.subject(r))
	}))
	f.rs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource":
			writeFixtureJSON(w, map[string]any{"resource": f.rs.URL + "/mcp", "authorization_servers": []string{f.as.URL}})
		case "/mcp":
			if f.subject(r) == "" {
				w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="invalid_token", resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, f.rs.URL))
				http.Error(w, `{"error":"invalid_token"}`, http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.rs.Close)
	return f
}

func (f *oauthFixture) subject(r *http.Request) string {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.issued[tok]
}

// tokens returns every access token issued.
func (f *oauthFixture) tokens() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for t := range f.issued {
		out = append(out, t)
	}
	return out
}

func writeFixtureJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (f *oauthFixture) serveAS(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		writeFixtureJSON(w, map[string]any{
			"issuer": f.as.URL, "authorization_endpoint": f.as.URL + "/authorize", "token_endpoint": f.as.URL + "/token",
			"registration_endpoint": f.as.URL + "/register", "code_challenge_methods_supported": []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"none"},
		})
	case "/register":
		writeFixtureJSON(w, map[string]any{"client_id": "dyn-client", "token_endpoint_auth_method": "none"})
	case "/authorize":
		q := r.URL.Query()
		f.mu.Lock()
		f.n++
		code := fmt.Sprintf("code-%d", f.n)
		f.codes[code] = [2]string{q.Get("code_challenge"), fmt.Sprintf("subject-%d", f.n)}
		f.mu.Unlock()
		to, err := url.Parse(q.Get("redirect_uri"))
		if err != nil || q.Get("resource") != f.rs.URL+"/mcp" {
			http.Error(w, "bad redirect_uri or resource", http.StatusBadRequest)
			return
		}
		v := to.Query()
		v.Set("code", code)
		v.Set("state", q.Get("state"))
		v.Set("iss", f.as.URL)
		to.RawQuery = v.Encode()
		http.Redirect(w, r, to.String(), http.StatusFound)
	case "/token":
		_ = r.ParseForm()
		f.mu.Lock()
		defer f.mu.Unlock()
		g, ok := f.codes[r.PostForm.Get("code")]
		delete(f.codes, r.PostForm.Get("code"))
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != g[0] {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":"invalid_grant"}`)
			return
		}
		at := fmt.Sprintf("at-7f3e9c%d-%s", len(f.issued)+1, strings.Repeat("x", 12))
		f.issued[at] = g[1]
		writeFixtureJSON(w, map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": 3600,
			"refresh_token": "rt-" + at})
	default:
		http.NotFound(w, r)
	}
}

// TestBrowserSignIn signs alice in to a server that asks for OAuth with the
// Connect button on its gateway node: the popup goes to the authorization
// server and back to the callback, the node's state changes over the event
// stream, and the agent (a scripted model) then calls the server with
// alice's token, which the server checks. Bob still needs to sign in. The
// token is in no log, no API answer and not in clear in the SQLite files.
func TestBrowserSignIn(t *testing.T) {
	f := newOAuthFixture(t)
	llm := newFakeLLM(t,
		call("mcp_secure", map[string]any{"action": "execute", "tool_name": "whoami", "tool_inputs": map[string]any{}}),
		answer("signed-in call done"))
	s := startService(t, serveOptions{Env: llm.Env(),
		Config: fmt.Sprintf(`{"servers": {"secure": {"type": "http", "url": %q, "oauth": {}}}}`, f.rs.URL+"/mcp")})
	b := newBrowser(t, browserTimeout)

	connect := `#tree .node[data-id="mcp_secure"] > .row .connect-button`
	b.do("open alice's page, the server needs sign-in",
		chromedp.Navigate(s.URL+"/tree/alice/c1"),
		chromedp.WaitVisible(css(`#tree .node[data-id="mcp_secure"] > .row .badge[data-state="needs_sign_in"]`)),
		chromedp.WaitVisible(css(connect)),
	)
	b.do("connect",
		chromedp.Click(css(connect)),
		chromedp.WaitVisible(css(`#signin-status[data-ok="true"]`)),
		// The event stream brings alice's new state: no more Connect.
		waitJS(`!document.querySelector(`+jsQuote(connect)+`) &&
			document.querySelector('#tree .node[data-id="mcp_secure"] > .row .badge').dataset.state !== "needs_sign_in"`),
	)
	if got := f.tokens(); len(got) != 1 {
		t.Fatalf("tokens issued = %d, want 1", len(got))
	}

	b.do("ask; the agent calls the server as alice",
		waitJS(`document.body.dataset.state === "idle"`),
		chromedp.SendKeys(css(`#query-input`), "who am I on secure?"),
		chromedp.Click(css(`#query-send`)),
		waitJS(`document.querySelector("#chat").textContent.includes("you are subject-1")`),
		waitJS(`document.querySelector("#chat").textContent.includes("signed-in call done")`),
	)

	var answers []string
	for _, user := range []string{"alice", "bob"} {
		code, body := do(t, "GET", s.URL+"/api/servers?user="+user, "", nil)
		raw, _ := json.Marshal(body)
		answers = append(answers, string(raw))
		state := ""
		if servers, _ := body["servers"].([]any); len(servers) == 1 {
			state, _ = servers[0].(map[string]any)["state"].(string)
		}
		if want := map[string]bool{"alice": false, "bob": true}[user]; code != 200 || (state == "needs_sign_in") != want {
			t.Errorf("%s's state = %d %q, want needs_sign_in %t", user, code, state, want)
		}
	}
	_, tree := do(t, "GET", s.URL+"/tree/alice/c1", "", nil)
	_, conv := do(t, "GET", s.URL+"/conversations/alice/c1", "", nil)
	for _, v := range []any{tree, conv} {
		raw, _ := json.Marshal(v)
		answers = append(answers, string(raw))
	}

	s.Stop(t) // flushes the log and the database
	files, _ := filepath.Glob(filepath.Join(s.Dir, "data", "elysia.db*"))
	if len(files) == 0 {
		t.Fatalf("no SQLite files in %s", filepath.Join(s.Dir, "data"))
	}
	for _, tok := range f.tokens() {
		if strings.Contains(s.Output(), tok) {
			t.Errorf("the service's log holds the token")
		}
		for _, a := range answers {
			if strings.Contains(a, tok) {
				t.Errorf("an API answer holds the token: %.200s", a)
			}
		}
		for _, file := range files {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(raw), tok) {
				t.Errorf("%s holds the token in clear", filepath.Base(file))
			}
		}
	}
	if fi, err := os.Stat(filepath.Join(s.Dir, "data", "secret.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("secret.key: %v, mode %v; want a 0600 file", err, fi)
	}
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
}

// jsQuote quotes s for JavaScript.
func jsQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
