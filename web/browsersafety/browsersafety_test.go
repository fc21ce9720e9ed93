package browsersafety

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/web/internal/webtest"
)

// TestSignInPageCSP: the sign-in callback page's one inline script and
// style are allowed by their hashes, which match what was served.
func TestSignInPageCSP(t *testing.T) {
	page := []byte("<style>body{}</style><script>\n(1)\n</script><script src=/x.js></script><SCRIPT type=\"text/javascript\">b()</SCRIPT >")
	csp := PageCSP(page, nil)
	if got, _ := webtest.CSPDirective(csp, "script-src"); got != "'self' "+hashOf("\n(1)\n")+" "+hashOf("b()") {
		t.Errorf("script-src = %q", got)
	}
	if got, _ := webtest.CSPDirective(csp, "style-src"); got != "'self' "+hashOf("body{}") {
		t.Errorf("style-src = %q", got)
	}
	if got, _ := webtest.CSPDirective(csp, "frame-ancestors"); got != "'none'" {
		t.Errorf("frame-ancestors = %q", got)
	}
}

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

func TestParseHosts(t *testing.T) {
	got, err := ParseHosts(" Elysia.LAN, box.example:8443 ,,[fe80::1], fe80::2, 10.0.0.5:8000, name. ")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"elysia.lan", "box.example:8443", "[fe80::1]", "[fe80::2]", "10.0.0.5:8000", "name"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ParseHosts = %q, want %q", got, want)
	}
	for _, bad := range []string{"http://x", "x/y", "x:http", "x:0", "x:70000", "user@x", "a b"} {
		if _, err := ParseHosts(bad); err == nil || !strings.Contains(err.Error(), "public host") {
			t.Errorf("ParseHosts(%q) = %v, want an error naming the entry", bad, err)
		}
	}
}

func TestParseOrigins(t *testing.T) {
	got, err := ParseOrigins(" https://app.example.com , *.trusted.test,,http://localhost:3000/")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"https://app.example.com", "*.trusted.test", "http://localhost:3000/"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ParseOrigins = %q, want %q", got, want)
	}
	for _, bad := range []string{"null", "https://x/path", "ftp://x", "https://u@x", "x/y", "[", "https://"} {
		if _, err := ParseOrigins(bad); err == nil || !strings.Contains(err.Error(), "origin") {
			t.Errorf("ParseOrigins(%q) = %v, want an error", bad, err)
		}
	}
}

// TestGuardCheck: each check's refusal matches its sentinel, and a body
// of unknown length that passes is put back whole.
func TestGuardCheck(t *testing.T) {
	g := New(true, []string{"elysia.lan"}, []string{"https://app.example.com"})
	reqPath := func(method, host, path, origin, contentType, body string, length int64) *http.Request {
		r := httptest.NewRequest(method, "http://"+host+path, strings.NewReader(body))
		r.Host = host
		r.ContentLength = length
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		if contentType != "" {
			r.Header.Set("Content-Type", contentType)
		}
		return r
	}
	req := func(method, host, origin, contentType, body string, length int64) *http.Request {
		return reqPath(method, host, "/x", origin, contentType, body, length)
	}
	for _, tt := range []struct {
		name string
		r    *http.Request
		want error
	}{
		{"loopback", req("GET", "127.0.0.1:8000", "", "", "", 0), nil},
		{"listed host", req("GET", "elysia.lan:8000", "", "", "", 0), nil},
		{"rebound host", req("GET", "evil.example", "", "", "", 0), ErrForbidden},
		{"own origin", req("POST", "127.0.0.1:8000", "http://127.0.0.1:8000", "", "", 0), nil},
		{"allowed origin", req("POST", "127.0.0.1:8000", "https://app.example.com", "", "", 0), nil},
		{"foreign origin", req("POST", "127.0.0.1:8000", "http://evil.example", "", "", 0), ErrForbidden},
		{"foreign origin on a read", req("GET", "127.0.0.1:8000", "http://evil.example", "", "", 0), nil},
		{"foreign origin on the MCP stream", reqPath("GET", "127.0.0.1:8000", "/mcp", "http://evil.example", "", "", 0), ErrForbidden},
		{"foreign origin on the SSE stream", reqPath("GET", "127.0.0.1:8000", "/sse", "http://evil.example", "", "", 0), ErrForbidden},
		{"own origin on the MCP stream", reqPath("GET", "127.0.0.1:8000", "/mcp", "http://127.0.0.1:8000", "", "", 0), nil},
		{"no origin on the MCP stream", reqPath("GET", "127.0.0.1:8000", "/mcp", "", "", "", 0), nil},
		{"text body", req("POST", "127.0.0.1:8000", "", "text/plain", "x", 1), ErrUnsupportedMediaType},
		{"chunked JSON", req("POST", "127.0.0.1:8000", "", "application/json", "{}", -1), nil},
		{"chunked text", req("POST", "127.0.0.1:8000", "", "text/plain", "{}", -1), ErrUnsupportedMediaType},
	} {
		err := g.Check(tt.r)
		if (err == nil) != (tt.want == nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
			t.Errorf("%s: Check = %v, want %v", tt.name, err, tt.want)
		}
		if tt.name == "chunked JSON" {
			if b, _ := io.ReadAll(tt.r.Body); string(b) != "{}" {
				t.Errorf("chunked JSON: body after Check = %q, want {}", b)
			}
		}
	}
	if o, err := g.OwnOrigin(req("GET", "elysia.lan", "", "", "", 0)); err != nil || o != "https://elysia.lan" {
		t.Errorf("OwnOrigin(elysia.lan) = %q, %v; want https://elysia.lan", o, err)
	}
	if _, err := g.OwnOrigin(req("GET", "evil.example", "", "", "", 0)); err == nil || !strings.Contains(err.Error(), "--public-host evil.example") {
		t.Errorf("OwnOrigin(evil.example) = %v, want how to list it", err)
	}
}

// TestSetHeadersShared: SetHeaders shares its values between responses;
// what one response does to its headers must not reach another's.
func TestSetHeadersShared(t *testing.T) {
	a, b := http.Header{}, http.Header{}
	SetHeaders(a)
	SetHeaders(b)
	a.Add("X-Frame-Options", "SAMEORIGIN")
	a.Set("Content-Security-Policy", "default-src *")
	want := map[string]string{"Content-Security-Policy": UICSP, "X-Frame-Options": "DENY",
		"X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin"}
	for k, v := range want {
		if got := b.Values(k); len(got) != 1 || got[0] != v {
			t.Errorf("%s = %q after another response changed its own; want %q", k, got, v)
		}
	}
	if got := a.Values("X-Frame-Options"); len(got) != 2 {
		t.Errorf("X-Frame-Options after Add = %q", got)
	}
	h := http.Header{}
	SetHeaders(h)
	if n := testing.AllocsPerRun(100, func() { SetHeaders(h) }); n != 0 {
		t.Errorf("SetHeaders allocates %v times", n)
	}
}
