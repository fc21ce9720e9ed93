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
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// oauthFixture is an authorization server that approves every sign-in at
// once (checking PKCE and the resource), and so serves --browser fetch
// too, and an MCP server, both on 127.0.0.1, that answers 401 without one
// of its live tokens. Its one tool, whoami, answers with the subject the
// token was issued to. mcpgateway's own fixture is in its test files, which
// this package cannot import.
type oauthFixture struct {
	as, rs *httptest.Server

	mu            sync.Mutex           // guards the fields below
	codes         map[string][2]string // code → PKCE challenge, subject
	access        map[string]string    // live access token → subject
	refresh       map[string]string    // live refresh token → subject
	issuedAccess  []string             // every access token handed out
	issuedRefresh []string             // every refresh token handed out
	revoked       []string             // token_type_hint of each revocation
	n             int                  // sign-ins so far
	registered    int                  // dynamic client registrations
	noIss         bool                 // answer without iss (an AS without RFC 9207)
	issSupported  bool                 // metadata: authorization_response_iss_parameter_supported
}

type subjectCtxKey struct{}

func newOAuthFixture(t *testing.T) *oauthFixture {
	t.Helper()
	f := &oauthFixture{codes: map[string][2]string{}, access: map[string]string{}, refresh: map[string]string{}}
	f.as = httptest.NewServer(http.HandlerFunc(f.serveAS))
	t.Cleanup(f.as.Close)
	srv := mcpserver.NewMCPServer("secure", "1.0.0")
	srv.AddTool(mcp.NewTool("whoami", mcp.WithDescription("Say whom the token is for.")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			sub, _ := ctx.Value(subjectCtxKey{}).(string)
			return mcp.NewToolResultText("you are " + sub + ", a signed-in user"), nil
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

// subject returns the subject of r's live access token, or "".
func (f *oauthFixture) subject(r *http.Request) string {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.access[tok]
}

// tokens returns every access token issued.
func (f *oauthFixture) tokens() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.issuedAccess...)
}

// registrations returns how many clients registered dynamically.
func (f *oauthFixture) registrations() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.registered
}

func writeFixtureJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (f *oauthFixture) serveAS(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		meta := map[string]any{
			"issuer": f.as.URL, "authorization_endpoint": f.as.URL + "/authorize", "token_endpoint": f.as.URL + "/token",
			"registration_endpoint": f.as.URL + "/register", "revocation_endpoint": f.as.URL + "/revoke",
			"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"none"},
		}
		f.mu.Lock()
		if f.issSupported {
			meta["authorization_response_iss_parameter_supported"] = true
		}
		f.mu.Unlock()
		writeFixtureJSON(w, meta)
	case "/register":
		f.mu.Lock()
		f.registered++
		f.mu.Unlock()
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
		f.mu.Lock()
		if !f.noIss {
			v.Set("iss", f.as.URL)
		}
		f.mu.Unlock()
		to.RawQuery = v.Encode()
		http.Redirect(w, r, to.String(), http.StatusFound)
	case "/token":
		_ = r.ParseForm()
		f.mu.Lock()
		defer f.mu.Unlock()
		var sub string
		switch r.PostForm.Get("grant_type") {
		case "refresh_token":
			var ok bool
			if sub, ok = f.refresh[r.PostForm.Get("refresh_token")]; !ok {
				invalidGrant(w)
				return
			}
		default:
			g, ok := f.codes[r.PostForm.Get("code")]
			delete(f.codes, r.PostForm.Get("code"))
			sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
			if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != g[0] {
				invalidGrant(w)
				return
			}
			sub = g[1]
		}
		// "cli-" marks a token value, so that a test can look for any.
		n := len(f.issuedAccess) + 1
		at, rt := fmt.Sprintf("cli-access-secret-%d", n), fmt.Sprintf("cli-refresh-secret-%d", n)
		f.access[at], f.refresh[rt] = sub, sub
		f.issuedAccess = append(f.issuedAccess, at)
		f.issuedRefresh = append(f.issuedRefresh, rt)
		writeFixtureJSON(w, map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": 3600, "refresh_token": rt})
	case "/revoke":
		_ = r.ParseForm()
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.access, r.PostForm.Get("token"))
		delete(f.refresh, r.PostForm.Get("token"))
		f.revoked = append(f.revoked, r.PostForm.Get("token_type_hint"))
	default:
		http.NotFound(w, r)
	}
}

func invalidGrant(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = io.WriteString(w, `{"error":"invalid_grant"}`)
}
