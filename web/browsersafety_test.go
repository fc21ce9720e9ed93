package web

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web/browsersafety"
)

// wsUpgrade are the headers of a WebSocket handshake.
var wsUpgrade = []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13",
	"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}

func mustHosts(tb testing.TB, s string) []string {
	tb.Helper()
	h, err := browsersafety.ParseHosts(s)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

func mustOrigins(tb testing.TB, s string) []string {
	tb.Helper()
	o, err := browsersafety.ParseOrigins(s)
	if err != nil {
		tb.Fatal(err)
	}
	return o
}

// TestBrowserSafety checks the Host allowlist, the Origin check and the
// JSON-only bodies (DESIGN.md, "Browser safety") on every kind of route,
// and that a refused request reaches no dependency.
func TestBrowserSafety(t *testing.T) {
	const (
		execute = "/api/servers/todo/execute"
		execJS  = `{"tool_name": "create_todo", "tool_inputs": {"title": "x"}}`
		evil    = "http://evil.example"
	)
	h := func(kv ...string) []string { return kv }
	ws := func(kv ...string) []string { return append(append([]string(nil), wsUpgrade...), kv...) }
	var keyless *Options
	keyed := &Options{Keys: testKeys}
	public := &Options{PublicHosts: mustHosts(t, "elysia.lan, box.example:8443")}
	keyedPublic := &Options{Keys: testKeys, PublicHosts: mustHosts(t, "elysia.lan")}
	allowed := &Options{AllowedOrigins: mustOrigins(t, "https://app.example.com, *.trusted.test")}

	tests := []struct {
		name               string
		opts               *Options
		method, path, body string
		headers            []string
		want               int
		wantErr            string // part of the error's text
	}{
		// The two curl commands.
		{"issue: cross-origin text/plain execute", keyless, "POST", execute, execJS,
			h("Origin", evil, "Content-Type", "text/plain"), 403, "ELYSIA_ALLOWED_ORIGINS"},
		{"issue: rebound Host", keyless, "GET", "/api/servers", "",
			h("Host", "evil.example:8000"), 403, "--public-host evil.example or list it in ELYSIA_PUBLIC_HOSTS"},

		// Bodies: JSON only, whatever the origin.
		{"text/plain without Origin", keyless, "POST", execute, execJS, h("Content-Type", "text/plain"), 415, `"text/plain"`},
		{"text/plain from the same origin", keyless, "POST", execute, execJS,
			h("Content-Type", "text/plain;charset=UTF-8", "Origin", "http://127.0.0.1:8000"), 415, "application/json"},
		{"form post", keyless, "POST", execute, "tool_name=create_todo&tool_inputs=x",
			h("Content-Type", "application/x-www-form-urlencoded"), 415, "application/x-www-form-urlencoded"},
		{"form post from a foreign page", keyless, "POST", execute, "tool_name=create_todo",
			h("Content-Type", "application/x-www-form-urlencoded", "Origin", evil), 403, "Origin"},
		{"multipart form post", keyless, "POST", "/query/alice/c1", "--b\r\n\r\nhi\r\n--b--",
			h("Content-Type", "multipart/form-data; boundary=b"), 415, "multipart/form-data"},
		{"body without Content-Type", keyless, "POST", execute, execJS, h("Content-Type", ""), 415, "missing Content-Type"},
		{"JSON with a charset", keyless, "POST", execute, execJS, h("Content-Type", "application/json; charset=utf-8"), 200, ""},
		{"JSON without Origin (curl, the CLI)", keyless, "POST", execute, execJS, nil, 200, ""},
		{"empty body needs no Content-Type", keyless, "POST", "/api/servers/todo/list", "", nil, 200, ""},
		{"empty init/user from the same origin", keyless, "POST", "/init/user/alice", "", h("Origin", "http://127.0.0.1:8000"), 200, ""},

		// Origin on state-changing routes.
		{"same origin", keyless, "POST", execute, execJS, h("Origin", "http://127.0.0.1:8000"), 200, ""},
		{"same origin, any case", keyless, "POST", execute, execJS,
			h("Host", "LocalHost:8000", "Origin", "http://localhost:8000"), 200, ""},
		{"same name, other port", keyless, "POST", execute, execJS, h("Origin", "http://127.0.0.1:9999"), 403, "Origin"},
		{"another loopback name is another origin", keyless, "POST", execute, execJS,
			h("Origin", "http://localhost:8000"), 403, "Origin"},
		{"null origin", keyless, "POST", execute, execJS, h("Origin", "null"), 403, `Origin "null"`},
		{"foreign Origin on DELETE", keyless, "DELETE", "/conversations/alice/c1", "", h("Origin", evil), 403, "Origin"},
		{"DELETE from the same origin", keyless, "DELETE", "/conversations/alice/c1", "", h("Origin", "http://127.0.0.1:8000"), 200, ""},
		{"foreign Origin on a query", keyless, "POST", "/query/alice/c1", `{"query": "hi"}`, h("Origin", evil), 403, "Origin"},
		{"foreign Origin on a tree change", keyless, "POST", "/tools/alice/add", `{"tool_name": "mcp_todo"}`, h("Origin", evil), 403, "Origin"},
		{"foreign Origin on an empty POST", keyless, "POST", "/init/user/alice", "", h("Origin", evil), 403, "Origin"},
		{"foreign Origin on a read is no change", keyless, "GET", "/api/servers", "", h("Origin", evil), 200, ""},

		// Host without keys.
		{"Host localhost", keyless, "GET", "/api/servers", "", h("Host", "localhost"), 200, ""},
		{"Host under .localhost", keyless, "GET", "/api/servers", "", h("Host", "app.localhost:8000"), 200, ""},
		{"Host 127.0.0.0/8", keyless, "GET", "/api/servers", "", h("Host", "127.1.2.3:80"), 200, ""},
		{"Host ::1", keyless, "GET", "/api/servers", "", h("Host", "[::1]:8000"), 200, ""},
		{"Host 0.0.0.0", keyless, "GET", "/api/servers", "", h("Host", "0.0.0.0:8000"), 403, "Host"},
		{"Host on the network", keyless, "GET", "/api/servers", "", h("Host", "10.0.0.5:8000"), 403, "--public-host 10.0.0.5"},
		{"Host starting like localhost", keyless, "GET", "/api/servers", "", h("Host", "localhost.evil.example"), 403, "Host"},
		{"Host starting like 127.0.0.1", keyless, "GET", "/api/servers", "", h("Host", "127.0.0.1.nip.io:8000"), 403, "Host"},
		{"empty Host", keyless, "GET", "/api/servers", "", h("Host", ""), 403, "Host"},
		{"rebound Host on the page", keyless, "GET", "/tree/alice/c1", "", h("Host", "evil.example:8000", "Accept", "text/html"), 403, "Host"},
		{"rebound Host with its own Origin", keyless, "POST", execute, execJS,
			h("Host", "evil.example:8000", "Origin", "http://evil.example:8000"), 403, "--public-host"},

		// The WebSocket handshake.
		{"ws: rebound Host with a matching Origin", keyless, "GET", "/ws/query", "",
			ws("Host", "evil.example:8000", "Origin", "http://evil.example:8000"), 403, "--public-host evil.example"},
		{"ws: foreign Origin", keyless, "GET", "/ws/query", "", ws("Origin", evil), 403, "Origin"},
		{"ws: null Origin", keyless, "GET", "/ws/query", "", ws("Origin", "null"), 403, "Origin"},

		// With keys, any Host (a proxy's name) but the same Origin and
		// body rules.
		{"keyed: any Host", keyed, "GET", "/api/servers", "", h("Host", "evil.example", "Authorization", "Bearer key-alice"), 200, ""},
		{"keyed: foreign Origin", keyed, "POST", execute, execJS, h("Authorization", "Bearer key-alice", "Origin", evil), 403, "Origin"},
		{"keyed: text/plain", keyed, "POST", execute, execJS, h("Authorization", "Bearer key-alice", "Content-Type", "text/plain"), 415, ""},
		{"keyed with public hosts: unlisted", keyedPublic, "GET", "/api/servers", "",
			h("Host", "evil.example", "Authorization", "Bearer key-alice"), 403, "neither a loopback name nor a listed public host"},
		{"keyed with public hosts: listed", keyedPublic, "GET", "/api/servers", "",
			h("Host", "elysia.lan", "Authorization", "Bearer key-alice"), 200, ""},

		// --public-host / ELYSIA_PUBLIC_HOSTS.
		{"public host", public, "GET", "/api/servers", "", h("Host", "elysia.lan:8000"), 200, ""},
		{"public host, any case", public, "GET", "/api/servers", "", h("Host", "Elysia.LAN"), 200, ""},
		{"public host with its port", public, "GET", "/api/servers", "", h("Host", "box.example:8443"), 200, ""},
		{"public host on another port", public, "GET", "/api/servers", "", h("Host", "box.example:8000"), 403, "Host"},
		{"public hosts keep loopback", public, "GET", "/api/servers", "", h("Host", "localhost:8000"), 200, ""},
		{"public host, same origin", public, "POST", execute, execJS,
			h("Host", "elysia.lan:8000", "Origin", "http://elysia.lan:8000"), 200, ""},
		{"public host, other name", public, "GET", "/api/servers", "", h("Host", "evil.example"), 403, "Host"},

		// ELYSIA_ALLOWED_ORIGINS.
		{"allowed origin", allowed, "POST", execute, execJS, h("Origin", "https://app.example.com"), 200, ""},
		{"allowed origin, default port", allowed, "POST", execute, execJS, h("Origin", "https://app.example.com:443"), 200, ""},
		{"allowed origin, other scheme", allowed, "POST", execute, execJS, h("Origin", "http://app.example.com"), 403, "Origin"},
		{"allowed pattern", allowed, "DELETE", "/conversations/alice/c1", "", h("Origin", "https://ui.trusted.test"), 200, ""},
		{"allowed pattern is no suffix match", allowed, "POST", execute, execJS, h("Origin", "https://eviltrusted.test"), 403, "Origin"},
		{"allowed origins keep the own", allowed, "POST", execute, execJS, h("Origin", "http://127.0.0.1:8000"), 200, ""},
		{"allowed origins still refuse others", allowed, "GET", "/ws/query", "", ws("Origin", evil), 403, "Origin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := newHarness(t, tt.opts)
			rec := hs.do(t, tt.method, tt.path, tt.body, tt.headers...)
			if rec.Code != tt.want {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.want, rec.Body)
			}
			if tt.want < 400 {
				return
			}
			if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q, want JSON", ct)
			}
			var body struct {
				Error *string `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error == nil {
				t.Fatalf("body %s: want {\"error\": ...} (%v)", rec.Body, err)
			}
			if !strings.Contains(*body.Error, tt.wantErr) {
				t.Errorf("error %q, want it to contain %q", *body.Error, tt.wantErr)
			}
			// Refused before any route: nothing ran, nothing changed.
			if calls := hs.servers.executes(); len(calls) > 0 {
				t.Errorf("refused request ran a tool: %+v", calls)
			}
			if list, err := hs.trees.Conversations(t.Context(), "alice"); err != nil || len(list) != 1 {
				t.Errorf("after a refused request alice has %v (%v), want c1 alone", list, err)
			}
			c, ok, err := hs.trees.Existing(t.Context(), "alice", "c1")
			if err != nil || !ok {
				t.Fatalf("refused request deleted c1: %v", err)
			}
			if st := c.State(); len(st.Ops) > 0 || st.InitMode != tree.OneBranch {
				t.Errorf("refused request changed c1's tree: %+v", st.Ops)
			}
		})
	}
}

// TestBrowserSafetyChunkedBody checks the Content-Type rule on a body of
// unknown length, which only reading it can tell empty or not.
func TestBrowserSafetyChunkedBody(t *testing.T) {
	tests := []struct {
		name, body, contentType string
		want                    int
	}{
		{"text/plain", `{"tool_name": "create_todo", "tool_inputs": {"title": "x"}}`, "text/plain", 415},
		{"JSON", `{"tool_name": "create_todo", "tool_inputs": {"title": "x"}}`, "application/json", 200},
		{"empty", "", "", http.StatusBadRequest}, // needs no Content-Type: the handler says the body is missing
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := newHarness(t, nil)
			ts := startServer(t, hs)
			pr := strings.NewReader(tt.body)
			req, err := http.NewRequestWithContext(t.Context(), "POST", ts.URL+"/api/servers/todo/execute", struct{ *strings.Reader }{pr})
			if err != nil {
				t.Fatal(err)
			}
			req.ContentLength = -1 // chunked
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close() // only the status matters
			if resp.StatusCode != tt.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.want)
			}
			if ran := len(hs.servers.executes()) > 0; ran != (tt.want == 200) {
				t.Errorf("tool ran: %v, want %v", ran, tt.want == 200)
			}
		})
	}
}
