package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

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

// TestBrowserSignInConfirmPage follows a sign-in link (GET
// /oauth/start/:server) in Chromium: the page only asks to confirm, and
// starts nothing; its plain form POSTs the start from the service's own
// origin (the Origin check lets it through), the answer sets the
// __Host- sign-in cookie over http://127.0.0.1, which Chromium keeps and
// brings back to /oauth/callback/secure, and alice is signed in.
func TestBrowserSignInConfirmPage(t *testing.T) {
	f := newOAuthFixture(t)
	s := startService(t, serveOptions{
		Config: fmt.Sprintf(`{"servers": {"secure": {"type": "http", "url": %q, "oauth": {}}}}`, f.rs.URL+"/mcp")})
	b := newBrowser(t, browserTimeout)
	b.do("open the sign-in link",
		chromedp.Navigate(s.URL+"/oauth/start/secure?user=alice"),
		chromedp.WaitVisible(css(`#signin-confirm button`)),
	)
	if n := f.registrations(); n != 0 {
		t.Fatalf("the confirm page registered %d clients", n)
	}
	b.do("confirm",
		chromedp.Click(css(`#signin-confirm button`)),
		chromedp.WaitVisible(css(`#signin-result[data-ok="true"]`)),
		waitJS(`location.pathname === "/oauth/callback/secure"`),
	)
	if n := len(f.tokens()); n != 1 {
		t.Errorf("tokens issued = %d, want 1", n)
	}
	code, body := do(t, "GET", s.URL+"/api/servers?user=alice", "", nil)
	raw, _ := json.Marshal(body)
	if code != 200 || strings.Contains(string(raw), "needs_sign_in") {
		t.Errorf("alice's servers after the sign-in: %d %s", code, raw)
	}
}

// jsQuote quotes s for JavaScript.
func jsQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
