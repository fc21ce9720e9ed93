package web

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/elysia-go/elysia/web/browsersafety"
	"github.com/elysia-go/elysia/web/internal/webtest"
)

// TestSecurityHeaders: every response, page, asset, JSON, error or the
// frontend's page, forbids framing (CSP frame-ancestors and
// X-Frame-Options), sniffing, object and base elements, eval, scripts of
// other hosts and connections to other origins; the UI's own page and
// assets allow no inline script and no inline style.
func TestSecurityHeaders(t *testing.T) {
	const page = `<!doctype html><title>x</title><script src="/_next/a.js"></script><script>self.__next_f=[1]</script>`
	build := fstest.MapFS{"index.html": {Data: []byte(page)}, "_next/a.js": {Data: []byte("1")}}
	h := newHarness(t, &Options{Keys: testKeys, Frontend: build})
	const browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	for _, tt := range []struct {
		path   string
		accept string
		ui     bool // the project's own UI: its strict policy exactly
	}{
		{"/tree/alice/c1", browser, true},
		{"/ui/app.js", "", true},
		{"/ui/style.css", "", true},
		{"/ui/missing.js", "", true},
		{"/healthz", "", true},
		{"/conversations/alice", "", true}, // 401
		{"/", browser, false},
		{"/static/index.html", browser, false},
		{"/_next/a.js", "", true},
	} {
		rec := h.do(t, "GET", tt.path, "", "Accept", tt.accept)
		hd := rec.Header()
		if got := hd.Get("X-Frame-Options"); got != "DENY" {
			t.Errorf("GET %s: X-Frame-Options = %q, want DENY", tt.path, got)
		}
		if got := hd.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options = %q, want nosniff", tt.path, got)
		}
		csp := hd.Get("Content-Security-Policy")
		if tt.ui && csp != browsersafety.UICSP {
			t.Errorf("GET %s: Content-Security-Policy = %q, want %q", tt.path, csp, browsersafety.UICSP)
		}
		for name, want := range map[string]string{
			"frame-ancestors": "'none'", "connect-src": "'self'", "object-src": "'none'",
			"base-uri": "'none'", "default-src": "'none'",
		} {
			if got, ok := webtest.CSPDirective(csp, name); !ok || got != want {
				t.Errorf("GET %s: CSP %s = %q, want %q (policy %q)", tt.path, name, got, want, csp)
			}
		}
		scripts, _ := webtest.CSPDirective(csp, "script-src")
		if strings.Contains(scripts, "unsafe-eval") || !strings.HasPrefix(scripts, "'self'") ||
			tt.ui && strings.Contains(scripts, "unsafe") {
			t.Errorf("GET %s: script-src %q, want 'self' and no eval (and nothing inline for the UI)", tt.path, scripts)
		}
		if strings.Contains(scripts, "http") {
			t.Errorf("GET %s: script-src %q allows another host", tt.path, scripts)
		}
	}
}
