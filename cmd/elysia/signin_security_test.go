package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// browserStep is a browser without a cookie jar of its own: it follows
// redirects one by one and sends cookie (a Cookie header) to the service
// only, as a browser sends the service's cookies to the service.
func browserStep(t *testing.T, start, service, cookie string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	next := start
	for range 10 {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, next, nil)
		if err != nil {
			t.Fatal(err)
		}
		if cookie != "" && strings.HasPrefix(next, service+"/") {
			req.Header.Set("Cookie", cookie)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		_ = resp.Body.Close()
		loc := resp.Header.Get("Location")
		if resp.StatusCode/100 != 3 || loc == "" {
			return resp.StatusCode, string(body), next
		}
		u, err := resp.Request.URL.Parse(loc)
		if err != nil {
			t.Fatal(err)
		}
		next = u.String()
	}
	t.Fatalf("more than 10 redirects from %s", start)
	return 0, "", ""
}

// startSignIn starts user's web sign-in to server as the UI does (a
// same-origin POST asking for JSON) and returns the authorization URL and
// the sign-in cookie (name=value) the answer set.
func startSignIn(t *testing.T, s *serviceProc, server, user string) (string, string) {
	t.Helper()
	code, hdr, raw := rawDo(t, http.MethodPost, s.URL+"/oauth/start/"+server+"?user="+user, "", nil,
		map[string]string{"Accept": "application/json", "Origin": s.URL})
	var started struct{ URL string }
	if err := json.Unmarshal(raw, &started); code != http.StatusOK || err != nil || started.URL == "" {
		t.Fatalf("start %s for %s: %d %s", server, user, code, raw)
	}
	return started.URL, strings.SplitN(hdr.Get("Set-Cookie"), ";", 2)[0]
}

// serverStateOf is user's state of the one server of s.
func serverStateOf(t *testing.T, s *serviceProc, server, user string) string {
	t.Helper()
	_, body := do(t, http.MethodGet, s.URL+"/api/servers?user="+user, "", nil)
	servers, _ := body["servers"].([]any)
	for _, sv := range servers {
		if m, _ := sv.(map[string]any); m["name"] == server {
			st, _ := m["state"].(string)
			return st
		}
	}
	t.Fatalf("no server %q in %v", server, body)
	return ""
}

// TestWebSignInPlantedCookie: mallory starts a sign-in under her name and
// gets its victim, alice, to finish it in alice's browser, into which a
// page of another port of the same host planted the cookie computed from
// the state (which the authorization URL shows). Alice approves at the
// authorization server as herself: the callback must refuse, or alice's
// account would be stored under mallory's name.
func TestWebSignInPlantedCookie(t *testing.T) {
	t.Parallel()
	f := newOAuthFixture(t)
	s := startService(t, serveOptions{Config: fmt.Sprintf(`{"servers": {"secure": {"type": "http", "url": %q, "oauth": {}}}}`, f.rs.URL+"/mcp")})

	authURL, _ := startSignIn(t, s, "secure", "mallory")
	u, err := url.Parse(authURL)
	if err != nil {
		t.Fatal(err)
	}
	state := u.Query().Get("state")
	sum := sha256.Sum256([]byte(state))
	v := hex.EncodeToString(sum[:])
	planted := "elysia_signin_" + v[:16] + "=" + v
	code, body, at := browserStep(t, authURL, s.URL, planted)
	if code != http.StatusBadRequest || !strings.Contains(body, "not started in this browser") {
		t.Errorf("callback %s with a cookie computed from the state = %d %.300s, want 400", at, code, body)
	}
	if st := serverStateOf(t, s, "secure", "mallory"); st != "needs_sign_in" {
		t.Errorf("mallory's state after alice finished her sign-in = %q, want needs_sign_in", st)
	}

	// The browser that started its own sign-in finishes it.
	authURL, cookie := startSignIn(t, s, "secure", "alice")
	if code, body, _ := browserStep(t, authURL, s.URL, cookie); code != http.StatusOK {
		t.Fatalf("alice's own sign-in = %d %.300s", code, body)
	}
	if st := serverStateOf(t, s, "secure", "alice"); st == "needs_sign_in" {
		t.Errorf("alice still needs to sign in after her own sign-in")
	}
}

// hostileAS is a hostile MCP server and its authorization server, for a
// mix-up: its authorization endpoint forwards the browser to an honest
// authorization server, with the honest server's redirect URI, and its
// token endpoint notes every code and verifier it is sent.
type hostileAS struct {
	as, rs *httptest.Server

	mu     sync.Mutex // guards stolen
	stolen []url.Values
}

func newHostileAS(t *testing.T, honest *oauthFixture) *hostileAS {
	t.Helper()
	h := &hostileAS{}
	h.as = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			writeFixtureJSON(w, map[string]any{
				"issuer": h.as.URL, "authorization_endpoint": h.as.URL + "/authorize", "token_endpoint": h.as.URL + "/token",
				"registration_endpoint": h.as.URL + "/register", "code_challenge_methods_supported": []string{"S256"},
				"token_endpoint_auth_methods_supported": []string{"none"},
			})
		case "/register":
			writeFixtureJSON(w, map[string]any{"client_id": "hostile-client", "token_endpoint_auth_method": "none"})
		case "/authorize":
			q := r.URL.Query()
			q.Set("redirect_uri", strings.Replace(q.Get("redirect_uri"), "/oauth/callback/hostile", "/oauth/callback/honest", 1))
			q.Set("resource", honest.rs.URL+"/mcp")
			http.Redirect(w, r, honest.as.URL+"/authorize?"+q.Encode(), http.StatusFound)
		case "/token":
			_ = r.ParseForm()
			h.mu.Lock()
			h.stolen = append(h.stolen, r.PostForm)
			h.mu.Unlock()
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(h.as.Close)
	h.rs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource":
			writeFixtureJSON(w, map[string]any{"resource": h.rs.URL + "/mcp", "authorization_servers": []string{h.as.URL}})
		default:
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, h.rs.URL))
			http.Error(w, `{"error":"invalid_token"}`, http.StatusUnauthorized)
		}
	}))
	t.Cleanup(h.rs.Close)
	return h
}

func (h *hostileAS) tokenRequests() []url.Values {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]url.Values(nil), h.stolen...)
}

// TestWebSignInMixUp: alice signs in to a hostile server of mcp.json,
// whose authorization server forwards her to the honest one (which sends
// no iss, as RFC 9207 allows) with the honest server's redirect URI. The
// honest code comes back on the honest server's callback path with the
// hostile sign-in's state: refused, and the hostile token endpoint never
// sees the code or the PKCE verifier.
func TestWebSignInMixUp(t *testing.T) {
	t.Parallel()
	honest := newOAuthFixture(t)
	honest.noIss = true
	hostile := newHostileAS(t, honest)
	s := startService(t, serveOptions{Config: fmt.Sprintf(`{"servers": {
		"honest": {"type": "http", "url": %q, "oauth": {}},
		"hostile": {"type": "http", "url": %q, "oauth": {}}}}`, honest.rs.URL+"/mcp", hostile.rs.URL+"/mcp")})

	authURL, cookie := startSignIn(t, s, "hostile", "alice")
	code, body, at := browserStep(t, authURL, s.URL, cookie)
	if code != http.StatusBadRequest || !strings.Contains(body, "mix-up") {
		t.Errorf("the honest code on %s = %d %.300s, want 400 saying mix-up", at, code, body)
	}
	if got := hostile.tokenRequests(); len(got) != 0 {
		t.Errorf("the hostile token endpoint got the honest code and verifier: %v", got)
	}
	if st := serverStateOf(t, s, "hostile", "alice"); st != "needs_sign_in" {
		t.Errorf("alice's hostile state = %q, want needs_sign_in", st)
	}
}

// TestWebSignInIssRequired: an authorization server whose metadata says
// it sends iss with its answers (RFC 9207) answers without one: the web
// callback refuses it, as the sign-in kept across the redirect remembers
// what the metadata said.
func TestWebSignInIssRequired(t *testing.T) {
	t.Parallel()
	f := newOAuthFixture(t)
	f.issSupported, f.noIss = true, true
	s := startService(t, serveOptions{Config: fmt.Sprintf(`{"servers": {"secure": {"type": "http", "url": %q, "oauth": {}}}}`, f.rs.URL+"/mcp")})
	authURL, cookie := startSignIn(t, s, "secure", "alice")
	code, body, at := browserStep(t, authURL, s.URL, cookie)
	if code == http.StatusOK || !strings.Contains(body, "comes from issuer &#34;&#34;") {
		t.Errorf("an answer without iss on %s = %d %.400s, want a refusal naming the missing issuer", at, code, body)
	}
	if st := serverStateOf(t, s, "secure", "alice"); st != "needs_sign_in" {
		t.Errorf("alice's state = %q, want needs_sign_in", st)
	}
}

// TestWebSignInStartNeedsSameOriginPost: a cross-site GET (an image, a
// link) answers a confirm page and starts nothing, a cross-site POST is
// refused, and neither registers a client at the authorization server;
// the sign-ins waiting are capped per user, with a 429 that says so.
func TestWebSignInStartNeedsSameOriginPost(t *testing.T) {
	t.Parallel()
	f := newOAuthFixture(t)
	s := startService(t, serveOptions{Config: fmt.Sprintf(`{"servers": {"secure": {"type": "http", "url": %q, "oauth": {}}}}`, f.rs.URL+"/mcp")})

	code, _, raw := rawDo(t, http.MethodGet, s.URL+"/oauth/start/secure?user=alice", "", nil,
		map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Dest": "image"})
	if code != http.StatusOK || !strings.Contains(string(raw), `method="post"`) {
		t.Errorf("cross-site GET = %d %.300s, want the confirm page", code, raw)
	}
	code, _, raw = rawDo(t, http.MethodPost, s.URL+"/oauth/start/secure?user=alice", "", nil,
		map[string]string{"Origin": "https://evil.example"})
	if code != http.StatusForbidden {
		t.Errorf("cross-site POST = %d %.300s, want 403", code, raw)
	}
	if n := f.registrations(); n != 0 {
		t.Fatalf("cross-site requests registered %d clients", n)
	}

	for i := range 10 {
		code, _, raw := rawDo(t, http.MethodPost, s.URL+"/oauth/start/secure?user=alice", "", nil,
			map[string]string{"Accept": "application/json", "Origin": s.URL})
		if code != http.StatusOK {
			t.Fatalf("start %d = %d %s", i+1, code, raw)
		}
	}
	code, _, raw = rawDo(t, http.MethodPost, s.URL+"/oauth/start/secure?user=alice", "", nil,
		map[string]string{"Accept": "application/json", "Origin": s.URL})
	if code != http.StatusTooManyRequests || !strings.Contains(string(raw), `user \"alice\" has 10 sign-ins waiting`) {
		t.Errorf("11th start = %d %s, want 429 naming alice's 10", code, raw)
	}
	if n := f.registrations(); n != 10 {
		t.Errorf("registrations = %d, want 10 (none for the refused start)", n)
	}
	if code, _, raw := rawDo(t, http.MethodPost, s.URL+"/oauth/start/secure?user=bob", "", nil,
		map[string]string{"Accept": "application/json", "Origin": s.URL}); code != http.StatusOK {
		t.Errorf("bob's start with alice at her cap = %d %s", code, raw)
	}
}
