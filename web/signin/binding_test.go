package signin

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/web/internal/webtest"
)

// TestSignInCookieFromStateRefused: whoever knows a sign-in's state (it
// is in the authorization URL) plants cookies computed from it, under the
// old name and the new ones, and finishes the sign-in with their own code:
// refused, nothing stored, and the sign-in is spent.
func TestSignInCookieFromStateRefused(t *testing.T) {
	h := newSignInHarness(t, nil)
	rec := h.do(t, "POST", "/oauth/start/todo?user=alice", "")
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("start = %d %s", rec.Code, rec.Body)
	}
	state := stateOf(t, rec.Header().Get("Location"))
	sum := sha256.Sum256([]byte(state))
	v := hex.EncodeToString(sum[:])
	var planted []string
	for _, name := range []string{"elysia_signin_" + v[:16], signInCookieName("todo", true), signInCookieName("todo", false)} {
		for _, value := range []string{v, state} {
			planted = append(planted, name+"="+value)
		}
	}
	rec = h.do(t, "GET", "/oauth/callback/todo?state="+url.QueryEscape(state)+"&code=attackers-code", "",
		"Cookie", strings.Join(planted, "; "))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "not started in this browser") {
		t.Errorf("callback with cookies computed from the state = %d %s, want 400", rec.Code, rec.Body)
	}
	if got := h.f.token("todo", "alice"); got != "" {
		t.Errorf("the planted cookie signed alice in with %q", got)
	}
}

// TestSignInCallbackOnAnotherPath: an answer that comes back on another
// server's callback path (an authorization server mix-up: the code is
// another server's) is refused even with the right cookie, and so is one
// on the old single /oauth/callback.
func TestSignInCallbackOnAnotherPath(t *testing.T) {
	h := newSignInHarness(t, nil)
	for _, path := range []string{"/oauth/callback/other", "/oauth/callback"} {
		rec := h.do(t, "POST", "/oauth/start/todo?user=alice", "")
		state, cookie := stateOf(t, rec.Header().Get("Location")), signInCookieOf(t, rec, true)
		// The browser holds both servers' cookies, as if it had started both.
		other := signInCookieName("other", true) + "=" + strings.SplitN(cookie, "=", 2)[1]
		rec = h.do(t, "GET", path+"?state="+url.QueryEscape(state)+"&code=honest-code", "", "Cookie", cookie+"; "+other)
		want := "mix-up"
		if path == "/oauth/callback" {
			want = "each server has its own callback"
		}
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("callback on %s = %d %s, want 400 saying %q", path, rec.Code, rec.Body, want)
		}
		if got := h.f.token("todo", "alice"); got != "" {
			t.Errorf("an answer on %s stored %q", path, got)
		}
	}
}

// TestSignInStartNeedsPost: a GET (an image, a link, a navigation from
// another site) starts nothing and answers a confirm page with a plain
// form, escaped; a POST from another site is refused by the Origin check;
// a JSON GET is told to POST.
func TestSignInStartNeedsPost(t *testing.T) {
	h := newSignInHarness(t, nil)
	rec := h.do(t, "GET", "/oauth/start/todo?user=alice", "", "Sec-Fetch-Site", "cross-site")
	body := rec.Body.String()
	if rec.Code != http.StatusOK || !strings.Contains(body, `<form id="signin-confirm" method="post" action="/oauth/start/todo?user=alice">`) {
		t.Errorf("confirm page = %d\n%s", rec.Code, body)
	}
	if strings.Contains(body, "<script") || rec.Header().Get("X-Frame-Options") != "DENY" ||
		!strings.Contains(rec.Header().Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Errorf("confirm page has a script or may be framed: %v\n%s", rec.Header(), body)
	}
	rec = h.do(t, "GET", "/oauth/start/"+url.PathEscape(`<img src=x onerror=alert(1)>`)+"?user=alice", "")
	if b := rec.Body.String(); strings.Contains(b, "<img") || !strings.Contains(b, "&lt;img") {
		t.Errorf("confirm page does not escape the server's name:\n%s", b)
	}
	rec = h.do(t, "GET", "/oauth/start/todo?user=alice", "", "Accept", "application/json")
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "POST" || !strings.Contains(rec.Body.String(), "POST /oauth/start/todo") {
		t.Errorf("JSON GET = %d %s, want 405 saying POST", rec.Code, rec.Body)
	}
	rec = h.do(t, "POST", "/oauth/start/todo?user=alice", "", "Origin", "https://evil.example")
	if rec.Code != http.StatusForbidden {
		t.Errorf("POST from another site = %d %s, want 403", rec.Code, rec.Body)
	}
	if n := h.f.pendingCount(); n != 0 || len(h.f.redirects) != 0 {
		t.Errorf("sign-ins started without a same-origin POST: %d pending, redirects %v", n, h.f.redirects)
	}
	rec = h.do(t, "POST", "/oauth/start/todo?user=alice", "", "Origin", "http://"+webtest.Host)
	if rec.Code != http.StatusSeeOther || h.f.pendingCount() != 1 {
		t.Errorf("the confirm form's POST = %d %s, want 303 and one sign-in", rec.Code, rec.Body)
	}
}

// TestSignInStartTooMany: a start beyond the caps answers 429 with the
// reason, as JSON and as a page.
func TestSignInStartTooMany(t *testing.T) {
	h := newSignInHarness(t, nil)
	h.f.full = true
	rec := h.do(t, "POST", "/oauth/start/todo?user=alice", "", "Accept", "application/json")
	if rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), `has 10 sign-ins waiting`) {
		t.Errorf("start beyond the cap (JSON) = %d %s, want 429", rec.Code, rec.Body)
	}
	rec = h.do(t, "POST", "/oauth/start/todo?user=alice", "")
	if rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), `has 10 sign-ins waiting`) {
		t.Errorf("start beyond the cap (page) = %d %s, want 429", rec.Code, rec.Body)
	}
	if len(rec.Result().Cookies()) != 0 {
		t.Errorf("a refused start set cookies: %v", rec.Result().Cookies())
	}
}
