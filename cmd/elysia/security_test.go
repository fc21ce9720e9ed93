package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/elysia-go/elysia/internal/testenv"
)

// attackPage is a hostile page that tries, from its own origin, to run a
// tool on the service at %[1]s (http://127.0.0.1:PORT) and to read a tree:
// by fetch (no-cors and cors), by form posts and by WebSocket. Each attempt
// records what the page could see in window.__results.
const attackPage = `<!doctype html><meta charset="utf-8"><title>not Elysia</title><body><script>
const target = %[1]q;
const exec = target + "/api/servers/todo/execute";
const body = (title) => JSON.stringify({tool_name: "create_todo", tool_inputs: {title}});
const results = {};
async function attempt(name, f) {
	try { results[name] = await f(); } catch (e) { results[name] = "error: " + e.name; }
}
function submitForm(name, enctype, field, value) {
	return new Promise((resolve) => {
		const frame = document.createElement("iframe");
		frame.name = name;
		document.body.appendChild(frame);
		frame.addEventListener("load", () => {
			let doc = null;
			try { doc = frame.contentDocument; } catch (e) { doc = null; }
			if (doc && doc.URL === "about:blank") return; // the frame's first, empty load
			resolve(doc ? "read: " + doc.body.innerText : "unreadable");
		});
		const form = document.createElement("form");
		form.method = "POST";
		form.action = exec;
		form.enctype = enctype;
		form.target = name;
		const input = document.createElement("input");
		input.type = "hidden";
		input.name = field;
		input.value = value;
		form.appendChild(input);
		document.body.appendChild(form);
		form.submit();
	});
}
(async () => {
	await attempt("nocors_post", async () => {
		const r = await fetch(exec, {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body: body("pwned-nocors")});
		return r.type;
	});
	await attempt("cors_simple_post", async () => {
		const r = await fetch(exec, {method: "POST", headers: {"Content-Type": "text/plain"}, body: body("pwned-simple")});
		return "read: " + await r.text();
	});
	await attempt("cors_json_post", async () => {
		const r = await fetch(exec, {method: "POST", headers: {"Content-Type": "application/json"}, body: body("pwned-cors")});
		return "read: " + await r.text();
	});
	await attempt("cors_get_tree", async () => {
		const r = await fetch(target + "/tree/victim/c1");
		return "read: " + await r.text();
	});
	await attempt("nocors_get_tree", async () => {
		const r = await fetch(target + "/tree/victim/c1", {mode: "no-cors"});
		return r.type + " " + (await r.text()).length;
	});
	// A text/plain form sends name=value: here {..."title": "pwned-form="}}.
	await attempt("form_text", () => submitForm("f1", "text/plain",
		'{"tool_name": "create_todo", "tool_inputs": {"title": "pwned-form', '"}}'));
	await attempt("form_urlencoded", () => submitForm("f2", "application/x-www-form-urlencoded", "tool_name", "create_todo"));
	await attempt("websocket", () => new Promise((resolve) => {
		const ws = new WebSocket(target.replace(/^http/, "ws") + "/ws/query");
		let opened = false, got = 0;
		ws.onopen = () => {
			opened = true;
			ws.send(JSON.stringify({user_id: "victim", conversation_id: "wsconv", query_id: "qx",
				query: 'create a todo titled "pwned-ws" with priority=2'}));
		};
		ws.onmessage = () => { got++; };
		ws.onclose = () => resolve((opened ? "opened" : "refused") + " " + got);
	}));
	results.done = true;
	window.__results = results;
})();
</script>`

// TestBrowserForeignPage proves in a real Chromium that a page from another
// origin (another loopback port) can neither run a tool nor read a tree on
// a service without keys, by fetch, form post or WebSocket, and that a
// DNS-rebinding page (a foreign name resolving to 127.0.0.1) gets nothing
// either. The effect is checked on the server: no todo was created and no
// query ran. A page of the service's own origin still can.
func TestBrowserForeignPage(t *testing.T) {
	s := startService(t, serveOptions{})
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = fmt.Fprintf(w, attackPage, s.URL) // the browser's problem if it goes away
	}))
	t.Cleanup(evil.Close)
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	// rebind.test is a DNS-rebinding name: it resolves to the service.
	b := newBrowserWith(t, browserTimeout, chromedp.Flag("host-resolver-rules", "MAP rebind.test 127.0.0.1"))

	b.do("the foreign page's attacks", chromedp.Navigate(evil.URL), waitJS(`window.__results && window.__results.done`))
	got := eval[map[string]string](b, "results", `(() => { const r = {...window.__results}; delete r.done; return r; })()`)
	t.Logf("what the foreign page saw: %q", got)
	want := map[string]func(string) bool{
		// An opaque answer says nothing; the server side says more below.
		"nocors_post":      func(v string) bool { return v == "opaque" },
		"cors_simple_post": func(v string) bool { return v == "error: TypeError" },
		"cors_json_post":   func(v string) bool { return v == "error: TypeError" },
		"cors_get_tree":    func(v string) bool { return v == "error: TypeError" },
		"nocors_get_tree":  func(v string) bool { return v == "opaque 0" },
		"form_text":        func(v string) bool { return v == "unreadable" },
		"form_urlencoded":  func(v string) bool { return v == "unreadable" },
		"websocket":        func(v string) bool { return v == "refused 0" },
	}
	for name, ok := range want {
		if !ok(got[name]) {
			t.Errorf("%s: the foreign page saw %q", name, got[name])
		}
	}

	// DNS rebinding: the page's origin is http://rebind.test:PORT, so its
	// requests are same-origin, but the service refuses the name.
	rebound := "http://rebind.test:" + u.Port()
	resp, err := chromedp.RunResponse(b.ctx, chromedp.Navigate(rebound+"/tree/victim/c1"))
	if err != nil {
		b.fail("open the rebound page", err)
	}
	if resp.Status != http.StatusForbidden {
		t.Errorf("page at %s: status %d, want 403", rebound, resp.Status)
	}
	rebind := eval[[]string](b, "rebound requests", `(async () => {
		const read = async (p) => { const r = await p; return r.status + " " + await r.text(); };
		const ws = await new Promise((resolve) => {
			const w = new WebSocket(location.origin.replace(/^http/, "ws") + "/ws/query");
			w.onopen = () => resolve("opened");
			w.onclose = () => resolve("refused");
		});
		return [
			await read(fetch("/tree/victim/c1", {headers: {Accept: "application/json"}})),
			await read(fetch("/api/servers/todo/execute", {method: "POST", headers: {"Content-Type": "application/json"},
				body: JSON.stringify({tool_name: "create_todo", tool_inputs: {title: "pwned-rebind"}})})),
			ws,
		];
	})()`, chromedp.EvalAwaitPromise)
	for i, what := range []string{"GET /tree", "POST execute"} {
		if !strings.HasPrefix(rebind[i], "403 ") || !strings.Contains(rebind[i], "--public-host") {
			t.Errorf("rebound %s: %q, want 403 naming --public-host", what, rebind[i])
		}
	}
	if rebind[2] != "refused" {
		t.Errorf("rebound WebSocket: %s, want refused", rebind[2])
	}

	// On the server: no todo was created and the WebSocket query never ran.
	code, body := do(t, "POST", s.URL+"/api/servers/todo/execute", "", map[string]any{"tool_name": "list_todos"})
	if code != http.StatusOK {
		t.Fatalf("list_todos: %d %v", code, body)
	}
	if list := fmt.Sprint(body["result"]); strings.Contains(list, "pwned") {
		t.Errorf("the foreign pages created todos: %s", list)
	}
	if code, body := do(t, "GET", s.URL+"/conversations/victim/wsconv", "", nil); code != http.StatusNotFound {
		t.Errorf("the foreign WebSocket's conversation: %d %v, want 404 (no query ran)", code, body)
	}
	if strings.Contains(s.Output(), `"tool":"create_todo"`) {
		t.Errorf("create_todo was called; log:\n%s", s.Output())
	}

	// The service's own page still may.
	b.do("open the service's own page", chromedp.Navigate(s.URL+"/tree/me/first"), waitJS(`document.readyState === "complete"`))
	own := eval[int](b, "own-origin execute", `fetch("/api/servers/todo/execute", {method: "POST", headers: {"Content-Type": "application/json"},
		body: JSON.stringify({tool_name: "create_todo", tool_inputs: {title: "own page"}})}).then((r) => r.status)`, chromedp.EvalAwaitPromise)
	if own != http.StatusOK {
		t.Errorf("execute from the service's own page: %d, want 200", own)
	}
	code, body = do(t, "POST", s.URL+"/api/servers/todo/execute", "", map[string]any{"tool_name": "list_todos"})
	if list := fmt.Sprint(body["result"]); code != http.StatusOK || !strings.Contains(list, "own page") {
		t.Errorf("list_todos after the own page's execute: %d %s", code, list)
	}
}

// TestForeignRequests sends the requests to the real service, with
// and without the settings that allow a name or an origin.
func TestForeignRequests(t *testing.T) {
	t.Parallel()
	execBody := []byte(`{"tool_name": "create_todo", "tool_inputs": {"title": "x"}}`)
	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		s := startService(t, serveOptions{})
		// curl -X POST -H 'Origin: http://evil.example' -H 'Content-Type: text/plain' .../execute
		code, _, raw := rawDo(t, "POST", s.URL+"/api/servers/todo/execute", "", execBody,
			map[string]string{"Origin": "http://evil.example", "Content-Type": "text/plain"})
		if code != http.StatusForbidden || !strings.Contains(string(raw), "ELYSIA_ALLOWED_ORIGINS") {
			t.Errorf("cross-origin text/plain execute: %d %s, want 403 naming ELYSIA_ALLOWED_ORIGINS", code, raw)
		}
		// The same without Origin is still not JSON.
		code, _, raw = rawDo(t, "POST", s.URL+"/api/servers/todo/execute", "", execBody, map[string]string{"Content-Type": "text/plain"})
		if code != http.StatusUnsupportedMediaType {
			t.Errorf("text/plain execute: %d %s, want 415", code, raw)
		}
		// curl -H 'Host: evil.example:8000' .../api/servers
		code, raw = hostDo(t, s.URL+"/api/servers", "evil.example:8000")
		if code != http.StatusForbidden || !strings.Contains(string(raw), "--public-host evil.example") {
			t.Errorf("rebound Host: %d %s, want 403 naming --public-host", code, raw)
		}
		if strings.Contains(s.Output(), `"tool":"create_todo"`) {
			t.Errorf("create_todo was called")
		}
	})
	t.Run("public host and allowed origin", func(t *testing.T) {
		t.Parallel()
		s := startService(t, serveOptions{Args: []string{"--public-host", "elysia.test", "--public-host=a.test,b.test:9"},
			Env: []string{"ELYSIA_PUBLIC_HOSTS=env.test", "ELYSIA_ALLOWED_ORIGINS=https://app.example.com"}})
		for _, tc := range []struct {
			host string
			want int
		}{{"elysia.test:8000", 200}, {"a.test", 200}, {"b.test:9", 200}, {"b.test:10", 403}, {"env.test", 200}, {"evil.example", 403}} {
			if code, raw := hostDo(t, s.URL+"/api/servers", tc.host); code != tc.want {
				t.Errorf("Host %s: %d %.200s, want %d", tc.host, code, raw, tc.want)
			}
		}
		for _, tc := range []struct {
			origin string
			want   int
		}{{"https://app.example.com", 200}, {"https://evil.example", 403}} {
			if code, _, raw := rawDo(t, "POST", s.URL+"/api/servers/todo/execute", "", execBody,
				map[string]string{"Origin": tc.origin}); code != tc.want {
				t.Errorf("Origin %s: %d %.200s, want %d", tc.origin, code, raw, tc.want)
			}
		}
	})
	t.Run("bad settings", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			args []string
			env  string
			want string
		}{
			{[]string{"--public-host", "http://x.test"}, "", "public host"},
			{nil, "ELYSIA_PUBLIC_HOSTS=a b", "ELYSIA_PUBLIC_HOSTS"},
			{nil, "ELYSIA_ALLOWED_ORIGINS=null", "ELYSIA_ALLOWED_ORIGINS"},
		} {
			cmd := exec.Command(elysiaBin(t), append([]string{"serve", "--addr", "127.0.0.1:0", "--config", "none.json"}, tc.args...)...)
			cmd.Dir = t.TempDir()
			cmd.Env = append(cleanEnv(), tc.env)
			out, err := cmd.CombinedOutput()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != exitUsage || !strings.Contains(string(out), tc.want) {
				t.Errorf("serve %q %s: %v\n%s\nwant exit 2 naming %s", tc.args, tc.env, err, out, tc.want)
			}
		}
	})
}

// TestAPIToolCallLogged checks that a tool call made through
// /api/servers/:name/execute is logged with the request id and the key's
// user.
func TestAPIToolCallLogged(t *testing.T) {
	t.Parallel()
	s := startService(t, serveOptions{Env: []string{"ELYSIA_API_KEYS=" + aliceKey + ":alice"}})
	code, _, raw := rawDo(t, "POST", s.URL+"/api/servers/todo/execute", aliceKey,
		[]byte(`{"tool_name": "create_todo", "tool_inputs": {"title": "logged"}}`), map[string]string{"X-Request-ID": "rid-api-log-1"})
	if code != http.StatusOK {
		t.Fatalf("execute: %d %s", code, raw)
	}
	var line string
	testenv.WaitFor(t, 10*time.Second, "the tool call's log line", func() bool {
		for l := range strings.Lines(s.Output()) {
			if strings.Contains(l, `"msg":"tool call"`) && strings.Contains(l, `"tool":"create_todo"`) {
				line = l
			}
		}
		return line != ""
	})
	for _, want := range []string{`"request_id":"rid-api-log-1"`, `"user":"alice"`, `"status":"success"`} {
		if !strings.Contains(line, want) {
			t.Errorf("tool call log line %q lacks %s", line, want)
		}
	}
	if strings.Contains(s.Output(), aliceKey) {
		t.Errorf("the API key was logged")
	}
}

// TestServerFailureNamesServer runs a server that cannot start: the 502
// says which server failed and why, and once it is in back-off or its
// circuit opens, the 503 says until when and carries Retry-After.
func TestServerFailureNamesServer(t *testing.T) {
	t.Parallel()
	s := startService(t, serveOptions{Config: `{"servers": {"broken": {"type": "stdio", "command": "/nonexistent/mcp-server"}}}`})
	execBody := []byte(`{"tool_name": "anything"}`)
	var saw502 bool
	for i := 0; i < 20; i++ {
		code, hdr, raw := rawDo(t, "POST", s.URL+"/api/servers/broken/execute", "", execBody, nil)
		switch {
		case code == http.StatusBadGateway:
			saw502 = true
			if !strings.Contains(string(raw), `server \"broken\"`) || !strings.Contains(string(raw), "/nonexistent/mcp-server") ||
				!strings.Contains(string(raw), "request id") {
				t.Errorf("502 body %s, want the server, the reason and the request id", raw)
			}
		case code == http.StatusServiceUnavailable && hdr.Get("Retry-After") != "":
			if !saw502 {
				t.Errorf("the first failure was not a 502")
			}
			// The crash-loop back-off (three failed starts) or the open
			// circuit, whichever comes first: both say until when.
			why := strings.Contains(string(raw), "circuit open") || strings.Contains(string(raw), "retrying at")
			if !why || !strings.Contains(string(raw), "retry after ") {
				t.Errorf("503 body %s, want the open circuit or the back-off and until when", raw)
			}
			return
		case code == http.StatusServiceUnavailable:
			if !strings.Contains(string(raw), `server \"broken\"`) {
				t.Errorf("503 body %s, want the server named", raw)
			}
		default:
			t.Fatalf("execute on a broken server: %d %s", code, raw)
		}
	}
	t.Fatalf("no 503 with Retry-After after 20 failed calls; log:\n%s", s.Output())
}

// rawDo's headers cannot set Host (net/http sends Request.Host); hostDo can.
func hostDo(tb testing.TB, url, host string) (int, []byte) {
	tb.Helper()
	req, err := http.NewRequestWithContext(tb.Context(), "GET", url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("GET %s (Host %s): %v", url, host, err)
	}
	defer func() { _ = resp.Body.Close() }() // read to the end below
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
