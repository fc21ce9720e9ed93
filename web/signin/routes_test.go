package signin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web"
	"github.com/elysia-go/elysia/web/internal/webtest"
)

// fakeSignIns is a goroutine-safe SignIns and UserSecrets for the todo
// server: a sign-in stores a token, a state is good once.
type fakeSignIns struct {
	mu        sync.Mutex // guards every field below
	next      int
	pending   map[string]fakePending // by state
	full      bool                   // StartSignIn answers ErrTooMany
	tokens    map[[2]string]string   // server, user → token
	secrets   map[[2]string]string   // user, name → value
	redirects []string
}

type fakePending struct{ server, user, binding string }

func (f *fakeSignIns) pendingCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.pending)
}

func newFakeSignIns() *fakeSignIns {
	return &fakeSignIns{pending: map[string]fakePending{}, tokens: map[[2]string]string{}, secrets: map[[2]string]string{}}
}

func (f *fakeSignIns) StartSignIn(_ context.Context, st Start) (string, string, error) {
	switch st.Server {
	case "todo", "mcp_todo":
	case "local":
		return "", "", fmt.Errorf("%w: server %q takes no sign-in", tools.ErrInvalidArguments, st.Server)
	default:
		return "", "", fmt.Errorf("no MCP server %q: %w", st.Server, tree.ErrNotFound)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.full {
		return "", "", fmt.Errorf("user %q has 10 sign-ins waiting: %w", st.User, ErrTooMany)
	}
	f.next++
	state := fmt.Sprintf("state-%d", f.next)
	f.pending[state] = fakePending{"todo", st.User, st.Binding}
	redirect := st.CallbackOrigin + "/oauth/callback/todo"
	f.redirects = append(f.redirects, redirect)
	return "https://as.example/authorize?state=" + state + "&redirect_uri=" + url.QueryEscape(redirect), "todo", nil
}

func (f *fakeSignIns) FinishSignIn(_ context.Context, cb Callback) (string, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.pending[cb.State]
	delete(f.pending, cb.State)
	if !ok {
		return "", "", fmt.Errorf("sign in: %w", ErrUnknownState)
	}
	if err := cb.Check(p.server, p.binding); err != nil {
		return cb.Server, "", err
	}
	f.tokens[[2]string{p.server, p.user}] = "token-for-" + cb.Code
	return p.server, p.user, nil
}

func (f *fakeSignIns) SignOut(_ context.Context, server, user string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.tokens, [2]string{server, user})
	return nil
}

func (f *fakeSignIns) token(server, user string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokens[[2]string{server, user}]
}

func (f *fakeSignIns) PutSecret(_ context.Context, user, name, value string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.secrets[[2]string{user, name}] = value
	return nil
}

func (f *fakeSignIns) DeleteSecret(_ context.Context, user, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.secrets, [2]string{user, name})
	return nil
}

func (f *fakeSignIns) secret(user, name string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.secrets[[2]string{user, name}]
	return v, ok
}

// signInCookieOf returns the Cookie header that carries the sign-in
// cookie a start set, as the browser would send it back. secure says the
// start's redirect URI takes Secure cookies (https, or loopback): the
// cookie is then __Host- prefixed.
func signInCookieOf(t *testing.T, rec *httptest.ResponseRecorder, secure bool) string {
	t.Helper()
	for _, c := range rec.Result().Cookies() {
		if strings.Contains(c.Name, "elysia_signin_") {
			if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.MaxAge <= 0 || c.Domain != "" {
				t.Errorf("sign-in cookie %+v: want HttpOnly, SameSite=Lax, path /, no domain, a lifetime", c)
			}
			if secure != (c.Secure && strings.HasPrefix(c.Name, "__Host-")) {
				t.Errorf("sign-in cookie %s (Secure %t): want __Host- and Secure %t", c.Name, c.Secure, secure)
			}
			return c.Name + "=" + c.Value
		}
	}
	t.Fatalf("the start set no sign-in cookie: %v", rec.Result().Cookies())
	return ""
}

// stateOf returns the state in a start's authorization URL.
func stateOf(t *testing.T, authURL string) string {
	t.Helper()
	u, err := url.Parse(authURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("state")
}

func serverState(t *testing.T, body []byte) string {
	t.Helper()
	var st struct {
		Error   string `json:"error"`
		Servers []struct {
			State string `json:"state"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(body, &st); err != nil || len(st.Servers) != 1 {
		t.Fatalf("servers body %s: %v", body, err)
	}
	return st.Servers[0].State
}

func TestSignInKeyless(t *testing.T) {
	h := newSignInHarness(t, nil)
	if got := serverState(t, h.do(t, "GET", "/api/servers?user=alice", "").Body.Bytes()); got != "needs_sign_in" {
		t.Fatalf("alice's state before sign-in = %q", got)
	}
	if rec := h.do(t, "POST", "/oauth/start/todo", ""); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "?user=") {
		t.Errorf("start without user = %d %s, want 400 naming ?user=", rec.Code, rec.Body)
	}
	rec := h.do(t, "POST", "/oauth/start/mcp_todo?user=alice", "")
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("start = %d %s, want 303", rec.Code, rec.Body)
	}
	// The redirect URI names the server's own name, whatever name the
	// start used.
	if want := "http://" + webtest.Host + "/oauth/callback/todo"; h.f.redirects[0] != want {
		t.Errorf("redirect URI = %q, want %q", h.f.redirects[0], want)
	}
	state := stateOf(t, rec.Header().Get("Location"))
	signInCookieOf(t, rec, true) // set, Secure: http://127.0.0.1 takes Secure cookies; not sent below

	// The link finished in a browser that did not start it: refused, and
	// the sign-in is void.
	rec = h.do(t, "GET", "/oauth/callback/todo?state="+state+"&code=stolen&iss=https%3A%2F%2Fas.example", "")
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "not started in this browser") {
		t.Errorf("callback from another browser = %d %s, want 400", rec.Code, rec.Body)
	}
	if got := h.f.token("todo", "alice"); got != "" {
		t.Errorf("a callback from another browser stored %q for alice", got)
	}
	rec = h.do(t, "POST", "/oauth/start/mcp_todo?user=alice", "")
	state = stateOf(t, rec.Header().Get("Location"))
	cookie := signInCookieOf(t, rec, true)

	rec = h.do(t, "GET", "/oauth/callback/todo?state="+state+"&code=c0de-42&iss=https%3A%2F%2Fas.example", "", "Cookie", cookie)
	body := rec.Body.String()
	if rec.Code != http.StatusOK || !strings.Contains(body, "Signed in to todo") || !strings.Contains(rec.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("callback = %d %s", rec.Code, body)
	}
	for _, secret := range []string{state, "c0de-42", "token-for"} {
		if strings.Contains(body, secret) {
			t.Errorf("callback page holds %q", secret)
		}
	}
	if strings.Contains(body, "<script>") || !strings.Contains(body, `<script src="/oauth/signin-result.js">`) {
		t.Errorf("callback page has an inline script, or not its own:\n%s", body)
	}
	if js := h.do(t, "GET", "/oauth/signin-result.js", ""); js.Code != 200 || !strings.HasPrefix(js.Header().Get("Content-Type"), "text/javascript") ||
		!strings.Contains(js.Body.String(), "postMessage(result, window.location.origin)") {
		t.Errorf("callback script = %d %s: does not tell its opener, on its own origin only", js.Code, js.Body)
	}
	if got := h.f.token("todo", "alice"); got != "token-for-c0de-42" {
		t.Errorf("alice's token = %q", got)
	}
	if got := serverState(t, h.do(t, "GET", "/api/servers?user=alice", "").Body.Bytes()); got != "connected" {
		t.Errorf("alice's state after sign-in = %q, want connected", got)
	}
	if got := serverState(t, h.do(t, "GET", "/api/servers?user=bob", "").Body.Bytes()); got != "needs_sign_in" {
		t.Errorf("bob's state = %q, want needs_sign_in", got)
	}

	// The same state again: refused, nothing stored.
	rec = h.do(t, "GET", "/oauth/callback/todo?state="+state+"&code=other", "", "Cookie", cookie)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "already used") {
		t.Errorf("replayed callback = %d %s, want 400", rec.Code, rec.Body)
	}
	if got := h.f.token("todo", "alice"); got != "token-for-c0de-42" {
		t.Errorf("alice's token after a replay = %q", got)
	}
	if strings.Contains(h.logs.String(), "c0de-42") || strings.Contains(h.logs.String(), state) {
		t.Errorf("logs hold the code or the state:\n%s", h.logs)
	}

	if rec := h.do(t, "DELETE", "/oauth/todo?user=alice", ""); rec.Code != http.StatusNoContent {
		t.Errorf("sign out = %d %s", rec.Code, rec.Body)
	}
	if got := h.f.token("todo", "alice"); got != "" {
		t.Errorf("token after sign-out = %q", got)
	}
}

func TestSignInBadCallbacks(t *testing.T) {
	h := newSignInHarness(t, nil)
	for _, tc := range []struct {
		name, query string
		want        int
		wantText    string
		notText     string
	}{
		{"unknown state", "state=forged&code=x", 400, "unknown, expired or already used", ""},
		{"no code", "state=s", 400, "needs state and code", ""},
		{"refused by the authorization server", "error=access_denied&error_description=%3Cscript%3Ealert(1)%3C%2Fscript%3E&state=s",
			400, "did not sign you in: access_denied (&lt;script&gt;alert(1)&lt;/script&gt;)", "<script>alert"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := h.do(t, "GET", "/oauth/callback/todo?"+tc.query, "")
			body := rec.Body.String()
			if rec.Code != tc.want || !strings.Contains(body, tc.wantText) || (tc.notText != "" && strings.Contains(body, tc.notText)) {
				t.Errorf("callback = %d\n%s\nwant %d with %q", rec.Code, body, tc.want, tc.wantText)
			}
		})
	}
	if len(h.f.tokens) != 0 {
		t.Errorf("tokens stored: %v", h.f.tokens)
	}
}

func TestSignInWithKeys(t *testing.T) {
	h := newSignInHarness(t, &web.Options{Keys: testKeys, PublicHosts: []string{"app.example.com"}})
	const alice, bob, admin = "Bearer key-alice", "Bearer key-bob", "Bearer key-admin"
	for _, tc := range []struct {
		name, method, path string
		headers            []string
		want               int
	}{
		{"no key", "POST", "/oauth/start/todo", nil, 401},
		{"key in the URL is not a key", "POST", "/oauth/start/todo?key=key-alice", nil, 401},
		{"another user", "POST", "/oauth/start/todo?user=alice", []string{"Authorization", bob}, 403},
		{"admin without user", "POST", "/oauth/start/todo", []string{"Authorization", admin}, 400},
		{"unknown server", "POST", "/oauth/start/nope", []string{"Authorization", alice, "Accept", "application/json"}, 404},
		{"server without sign-in", "POST", "/oauth/start/local", []string{"Authorization", alice, "Accept", "application/json"}, 422},
		{"unlisted host", "POST", "/oauth/start/todo", []string{"Authorization", alice, "Host", "evil.example"}, 403},
		{"start from another site", "POST", "/oauth/start/todo", []string{"Authorization", alice, "Origin", "https://evil.example"}, 403},
		{"confirm page, no key", "GET", "/oauth/start/todo", nil, 401},
		{"sign out, no key", "DELETE", "/oauth/todo", nil, 401},
		{"sign out, other origin", "DELETE", "/oauth/todo", []string{"Authorization", alice, "Origin", "https://evil.example"}, 403},
		{"servers of another user", "GET", "/api/servers?user=alice", []string{"Authorization", bob}, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := h.do(t, tc.method, tc.path, "", tc.headers...)
			if rec.Code != tc.want {
				t.Errorf("%s %s = %d %s, want %d", tc.method, tc.path, rec.Code, rec.Body, tc.want)
			}
		})
	}

	rec := h.do(t, "POST", "/oauth/start/todo", "", "Authorization", alice, "Accept", "application/json", "Host", "app.example.com")
	var body struct {
		Error string `json:"error"`
		URL   string `json:"url"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); rec.Code != 200 || err != nil || body.URL == "" {
		t.Fatalf("start as JSON = %d %s", rec.Code, rec.Body)
	}
	if want := "https://app.example.com/oauth/callback/todo"; h.f.redirects[0] != want {
		t.Errorf("redirect URI on a public host = %q, want %q", h.f.redirects[0], want)
	}
	// The callback needs no key: the state says whose sign-in it is, and
	// the cookie that the browser which started it is back. On an https
	// public host the cookie is Secure.
	cookie := signInCookieOf(t, rec, true)
	if rec := h.do(t, "GET", "/oauth/callback/todo?code=abc&state="+stateOf(t, body.URL), "", "Host", "app.example.com", "Cookie", cookie); rec.Code != 200 {
		t.Fatalf("callback = %d %s", rec.Code, rec.Body)
	}
	if h.f.token("todo", "alice") == "" || h.f.token("todo", "bob") != "" {
		t.Errorf("tokens = %v, want alice's only", h.f.tokens)
	}
	if got := serverState(t, h.do(t, "GET", "/api/servers", "", "Authorization", alice).Body.Bytes()); got != "connected" {
		t.Errorf("alice's state = %q", got)
	}
	if got := serverState(t, h.do(t, "GET", "/api/servers", "", "Authorization", bob).Body.Bytes()); got != "needs_sign_in" {
		t.Errorf("bob's state = %q", got)
	}
}

func TestUserSecrets(t *testing.T) {
	h := newSignInHarness(t, &web.Options{Keys: testKeys})
	const alice, bob = "Bearer key-alice", "Bearer key-bob"
	const value = "s3cret-value-77"
	for _, tc := range []struct {
		name, method, path, body string
		headers                  []string
		want                     int
	}{
		{"set", "PUT", "/users/alice/secrets/GH_TOKEN", `{"value": "` + value + `"}`, []string{"Authorization", alice}, 204},
		{"another user's", "PUT", "/users/alice/secrets/GH_TOKEN", `{"value": "x"}`, []string{"Authorization", bob}, 403},
		{"bad name", "PUT", "/users/alice/secrets/a%20b", `{"value": "x"}`, []string{"Authorization", alice}, 400},
		{"empty value", "PUT", "/users/alice/secrets/GH_TOKEN", `{"value": ""}`, []string{"Authorization", alice}, 400},
		{"no value", "PUT", "/users/alice/secrets/GH_TOKEN", `{}`, []string{"Authorization", alice}, 400},
		// A value over 16 KiB is refused, and the one kept stays.
		{"value too long", "PUT", "/users/alice/secrets/GH_TOKEN", `{"value": "` + strings.Repeat("x", 16<<10+1) + `"}`, []string{"Authorization", alice}, 413},
		{"value at the cap", "PUT", "/users/alice/secrets/BIG", `{"value": "` + strings.Repeat("x", 16<<10) + `"}`, []string{"Authorization", alice}, 204},
		{"not JSON", "PUT", "/users/alice/secrets/GH_TOKEN", `value`, []string{"Authorization", alice, "Content-Type", "text/plain"}, 415},
		{"never read back", "GET", "/users/alice/secrets/GH_TOKEN", "", []string{"Authorization", alice}, 405},
		{"delete another user's", "DELETE", "/users/alice/secrets/GH_TOKEN", "", []string{"Authorization", bob}, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := h.do(t, tc.method, tc.path, tc.body, tc.headers...)
			if rec.Code != tc.want || strings.Contains(rec.Body.String(), value) {
				t.Errorf("%s %s = %d %s, want %d", tc.method, tc.path, rec.Code, rec.Body, tc.want)
			}
		})
	}
	if got, _ := h.f.secret("alice", "GH_TOKEN"); got != value {
		t.Errorf("alice's secret = %q", got)
	}
	if rec := h.do(t, "DELETE", "/users/alice/secrets/GH_TOKEN", "", "Authorization", alice); rec.Code != 204 {
		t.Errorf("delete = %d %s", rec.Code, rec.Body)
	}
	if _, ok := h.f.secret("alice", "GH_TOKEN"); ok {
		t.Error("secret still there after delete")
	}
	if strings.Contains(h.logs.String(), value) {
		t.Errorf("logs hold the secret:\n%s", h.logs)
	}
}
