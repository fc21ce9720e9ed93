package mcpgateway

import (
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// authFixture is a real authorization server and a real MCP server that
// checks its tokens, both on 127.0.0.1: the AS approves every
// authorization at once (for FetchBrowser), checks PKCE and records what
// it was asked; the MCP server answers 401 without a valid token and 403
// insufficient_scope when a tool needs more scope.
type authFixture struct {
	t  *testing.T
	as *httptest.Server
	rs *httptest.Server

	// Set before the first request.
	noS256        bool     // AS metadata without S256
	prmResource   string   // overrides the resource of the PRM
	prmInHeader   bool     // WWW-Authenticate names the PRM
	scopeInHeader string   // scope of the 401 challenge
	callScopes    []string // scopes tools/call needs (403 below them)
	expiresIn     int      // seconds; 0 means 3600
	tokenFails    int      // status the token endpoint answers with HTML
	badState      bool     // the AS sends back another state
	issSupported  bool     // AS metadata: authorization_response_iss_parameter_supported
	iss           string   // the iss the AS sends back with its answer; "" none
	neverEnough   bool     // tools/call always gets 403 insufficient_scope
	ecKey         *ecdsa.PublicKey
	noRevocation  bool // AS metadata without revocation_endpoint
	revokeFails   int  // status the revocation endpoint answers with
	revokeHangs   bool // the revocation endpoint never answers

	mu       sync.Mutex
	paths    []string          // every request, "AS GET /path" or "RS POST /path"
	auths    []url.Values      // authorization requests
	tokens   []url.Values      // token requests (form), with "auth" = the Authorization header
	issued   map[string]issued // access token → what it grants
	refresh  map[string]string // refresh token → subject
	codes    map[string]codeGrant
	revoked  map[string]bool
	revokes  []url.Values // revocation requests (form), with "auth" = the Authorization header
	subjects int
}

type issued struct {
	subject string
	scopes  []string
	expiry  time.Time
}

type codeGrant struct {
	challenge, resource, subject string
	scopes                       []string
}

func newAuthFixture(t *testing.T) *authFixture {
	t.Helper()
	f := &authFixture{t: t, prmInHeader: true, issued: map[string]issued{}, refresh: map[string]string{},
		codes: map[string]codeGrant{}, revoked: map[string]bool{}}
	f.as = httptest.NewServer(http.HandlerFunc(f.serveAS))
	t.Cleanup(f.as.Close)

	srv := mcpserver.NewMCPServer("protected", "1.0.0")
	srv.AddTool(mcp.NewTool("whoami"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		sub, _ := ctx.Value(subjectKey{}).(string)
		return mcp.NewToolResultText(sub), nil
	})
	mcpHandler := mcpserver.NewStreamableHTTPServer(srv, mcpserver.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		f.mu.Lock()
		defer f.mu.Unlock()
		return context.WithValue(ctx, subjectKey{}, f.issued[tok].subject)
	}))
	f.rs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.note("RS " + r.Method + " " + r.URL.Path)
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			res := f.rs.URL + "/mcp"
			if f.prmResource != "" {
				res = f.prmResource
			}
			writeJSON(w, map[string]any{"resource": res, "authorization_servers": []string{f.as.URL}})
			return
		}
		if r.URL.Path != "/mcp" {
			http.NotFound(w, r)
			return
		}
		if !f.authorized(w, r) {
			return
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(f.rs.Close)
	return f
}

type subjectKey struct{}

func (f *authFixture) note(s string) {
	f.mu.Lock()
	f.paths = append(f.paths, s)
	f.mu.Unlock()
}

func (f *authFixture) config(name string) mcpconfig.ServerConfig {
	return mcpconfig.ServerConfig{Name: name, Transport: mcpconfig.TransportHTTP, URL: f.rs.URL + "/mcp", Enabled: true,
		ConnectTimeout: 5 * time.Second, CallTimeout: 5 * time.Second, OAuth: &mcpconfig.OAuthConfig{}}
}

// authorized checks the bearer token of an MCP request, answering 401 or
// 403 itself when it does not do.
func (f *authFixture) authorized(w http.ResponseWriter, r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	f.mu.Lock()
	is, known := f.issued[tok]
	f.mu.Unlock()
	params := ""
	if f.prmInHeader {
		params = fmt.Sprintf(`resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, f.rs.URL)
	}
	if f.scopeInHeader != "" {
		params += fmt.Sprintf(`, scope="%s"`, f.scopeInHeader)
	}
	if !ok || !known || time.Now().After(is.expiry) {
		w.Header().Set("WWW-Authenticate", "Bearer error=\"invalid_token\", "+strings.TrimPrefix(params, ", "))
		http.Error(w, `{"error":"invalid_token"}`, http.StatusUnauthorized)
		return false
	}
	if len(f.callScopes) > 0 && strings.Contains(peekBody(r), `"tools/call"`) && (f.neverEnough || !containsAll(is.scopes, f.callScopes)) {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope="%s"`, strings.Join(f.callScopes, " ")))
		http.Error(w, `{"error":"insufficient_scope"}`, http.StatusForbidden)
		return false
	}
	return true
}

func peekBody(r *http.Request) string {
	var b strings.Builder
	buf := make([]byte, 1<<16)
	n, _ := r.Body.Read(buf)
	b.Write(buf[:n])
	r.Body = readerCloser{strings.NewReader(b.String()), r.Body}
	return b.String()
}

type readerCloser struct {
	*strings.Reader
	c interface{ Close() error }
}

func (r readerCloser) Close() error { return r.c.Close() }

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (f *authFixture) serveAS(w http.ResponseWriter, r *http.Request) {
	f.note("AS " + r.Method + " " + r.URL.Path)
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		methods := []string{"S256"}
		if f.noS256 {
			methods = []string{"plain"}
		}
		meta := map[string]any{
			"issuer": f.as.URL, "authorization_endpoint": f.as.URL + "/authorize", "token_endpoint": f.as.URL + "/token",
			"registration_endpoint": f.as.URL + "/register", "code_challenge_methods_supported": methods,
			"token_endpoint_auth_methods_supported": []string{"none", "client_secret_basic", "private_key_jwt"},
			"scopes_supported":                      []string{"read", "write", "offline_access"},
		}
		if !f.noRevocation {
			meta["revocation_endpoint"] = f.as.URL + "/revoke"
		}
		if f.issSupported {
			meta["authorization_response_iss_parameter_supported"] = true
		}
		writeJSON(w, meta)
	case "/revoke":
		f.revoke(w, r)
	case "/html":
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html>not metadata</html>"))
	case "/register":
		writeJSON(w, map[string]any{"client_id": "dyn-client", "token_endpoint_auth_method": "none"})
	case "/authorize":
		q := r.URL.Query()
		f.mu.Lock()
		f.auths = append(f.auths, q)
		f.subjects++
		code := fmt.Sprintf("code-%d", f.subjects)
		f.codes[code] = codeGrant{challenge: q.Get("code_challenge"), resource: q.Get("resource"),
			subject: fmt.Sprintf("subject-%d", f.subjects), scopes: strings.Fields(q.Get("scope"))}
		f.mu.Unlock()
		state := q.Get("state")
		if f.badState {
			state = "forged"
		}
		to, _ := url.Parse(q.Get("redirect_uri"))
		v := to.Query()
		v.Set("code", code)
		v.Set("state", state)
		if f.iss != "" {
			v.Set("iss", f.iss)
		}
		to.RawQuery = v.Encode()
		http.Redirect(w, r, to.String(), http.StatusFound)
	case "/token":
		_ = r.ParseForm()
		form := r.PostForm
		form.Set("auth", r.Header.Get("Authorization"))
		f.mu.Lock()
		f.tokens = append(f.tokens, form)
		f.mu.Unlock()
		if f.tokenFails != 0 {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(f.tokenFails)
			_, _ = w.Write([]byte("<html><body>upstream broke</body></html>"))
			return
		}
		f.token(w, form)
	default:
		http.NotFound(w, r)
	}
}

func (f *authFixture) token(w http.ResponseWriter, form url.Values) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fail := func(code string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprintf(w, `{"error":%q}`, code)
	}
	var subject string
	var scopes []string
	switch form.Get("grant_type") {
	case "authorization_code":
		g, ok := f.codes[form.Get("code")]
		delete(f.codes, form.Get("code"))
		sum := sha256.Sum256([]byte(form.Get("code_verifier")))
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge || form.Get("resource") != g.resource {
			fail("invalid_grant")
			return
		}
		subject, scopes = g.subject, g.scopes
	case "refresh_token":
		s, ok := f.refresh[form.Get("refresh_token")]
		if !ok || f.revoked[form.Get("refresh_token")] {
			fail("invalid_grant")
			return
		}
		subject = s
	case "client_credentials":
		if f.ecKey != nil && !verifyES256(form.Get("client_assertion"), f.ecKey) {
			fail("invalid_client")
			return
		}
		subject, scopes = "service", strings.Fields(form.Get("scope"))
	default:
		fail("unsupported_grant_type")
		return
	}
	n := len(f.issued) + 1
	at, rt := fmt.Sprintf("secret-access-%d", n), fmt.Sprintf("secret-refresh-%d", n)
	exp := f.expiresIn
	if exp == 0 {
		exp = 3600
	}
	f.issued[at] = issued{subject: subject, scopes: scopes, expiry: time.Now().Add(time.Duration(exp) * time.Second)}
	f.refresh[rt] = subject
	writeJSON(w, map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": exp, "refresh_token": rt, "scope": strings.Join(scopes, " ")})
}

// revoke is the RFC 7009 endpoint: it forgets the token it is given,
// access or refresh, and answers 200 even for one it does not know.
func (f *authFixture) revoke(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm() // the body read, net/http sees the client leave
	if f.revokeHangs {
		<-r.Context().Done()
		return
	}
	form := r.PostForm
	form.Set("auth", r.Header.Get("Authorization"))
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revokes = append(f.revokes, form)
	if f.revokeFails != 0 {
		w.WriteHeader(f.revokeFails)
		return
	}
	tok := form.Get("token")
	delete(f.issued, tok)
	if _, ok := f.refresh[tok]; ok {
		f.revoked[tok] = true
	}
}

func (f *authFixture) revocations() []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.revokes)
}

// expire makes the MCP server refuse every access token issued so far,
// as if they had expired.
func (f *authFixture) expire() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for at, is := range f.issued {
		is.expiry = time.Now().Add(-time.Second)
		f.issued[at] = is
	}
}

// refreshes counts the refresh-token requests the token endpoint got.
func (f *authFixture) refreshes() int {
	n := 0
	for _, r := range f.tokenRequests() {
		if r.Get("grant_type") == "refresh_token" {
			n++
		}
	}
	return n
}

// verifyES256 checks a compact ES256 JWS.
func verifyES256(jws string, key *ecdsa.PublicKey) bool {
	parts := strings.Split(jws, ".")
	if len(parts) != 3 {
		return false
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return false
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	return ecdsa.Verify(key, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:]))
}

func (f *authFixture) authRequests() []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.auths)
}

func (f *authFixture) tokenRequests() []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.tokens)
}

func (f *authFixture) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.paths)
}

// containsAll reports whether have holds every scope of want.
func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
