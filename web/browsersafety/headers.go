package browsersafety

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"regexp"
	"strings"
)

// UICSP is the Content-Security-Policy of every response but the few pages
// that set their own (PageCSP): the project's UI runs only its own module
// scripts and style sheet, with no inline script, no eval and no inline
// <style>; it talks only to this origin (fetch and the WebSocket), shows
// only its own and data: images, and may not be framed. A renderer bug
// that let markup through would find no script it may run and no host it
// may send a key to.
const UICSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"media-src 'self' data:; font-src 'self'; connect-src 'self'; manifest-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"

// SetHeaders sets, in a response's h, the headers that keep a page of
// this service from being framed, sniffed or given script it did not ship:
// Content-Security-Policy (UICSP; a page with inline script replaces it
// with PageCSP), X-Frame-Options DENY for browsers without
// frame-ancestors, nosniff, and a referrer policy that sends no path to
// another site. web sets them on every response, before its route.
//
// The values are shared by every response, so setting them allocates
// nothing: each is a one-element slice at full capacity, which Header.Set
// replaces and Header.Add copies before it appends; nothing writes into
// one.
func SetHeaders(h http.Header) {
	for _, kv := range headerValues {
		h[kv.key] = kv.value
	}
}

// headerValues are SetHeaders' headers, keys in canonical form.
var headerValues = []struct {
	key   string
	value []string
}{
	{"Content-Security-Policy", []string{UICSP}[:1:1]},
	{"X-Frame-Options", []string{"DENY"}[:1:1]},
	{"X-Content-Type-Options", []string{"nosniff"}[:1:1]},
	{"Referrer-Policy", []string{"same-origin"}[:1:1]},
}

// inlineScript and inlineStyle find a page's inline <script> and <style>
// elements: their attributes and their text. The pages are the service's
// own or the operator's frontend build, not hostile input.
var (
	inlineScript = regexp.MustCompile(`(?is)<script(\s[^>]*)?>(.*?)</script\s*>`)
	inlineStyle  = regexp.MustCompile(`(?is)<style(\s[^>]*)?>(.*?)</style\s*>`)
	srcAttr      = regexp.MustCompile(`(?i)\ssrc\s*=`)
)

// PageCSP is the Content-Security-Policy of an HTML page that carries
// inline scripts (the sign-in pages; the frontend build's pages, with an
// override of their own): UICSP's rules, with each inline <script> and <style> of page
// allowed by its SHA-256 hash and nothing else inline. override replaces
// the source list of the directives it names (the frontend's workers and
// injected styles).
func PageCSP(page []byte, override map[string]string) string {
	scripts := []string{"'self'"}
	for _, m := range inlineScript.FindAllSubmatch(page, -1) {
		if !srcAttr.Match(m[1]) {
			scripts = append(scripts, hashSource(m[2]))
		}
	}
	styles := []string{"'self'"}
	for _, m := range inlineStyle.FindAllSubmatch(page, -1) {
		styles = append(styles, hashSource(m[2]))
	}
	directives := [][2]string{
		{"default-src", "'none'"},
		{"script-src", strings.Join(scripts, " ")},
		{"style-src", strings.Join(styles, " ")},
		{"img-src", "'self' data:"},
		{"media-src", "'self' data:"},
		{"font-src", "'self'"},
		{"connect-src", "'self'"},
		{"worker-src", "'none'"},
		{"form-action", "'self'"},
		{"frame-ancestors", "'none'"},
		{"base-uri", "'none'"},
		{"object-src", "'none'"},
	}
	out := make([]string, 0, len(directives))
	for _, d := range directives {
		if v, ok := override[d[0]]; ok {
			d[1] = v
		}
		out = append(out, d[0]+" "+d[1])
	}
	return strings.Join(out, "; ")
}

// hashSource is the CSP hash source of an inline element's text.
func hashSource(text []byte) string {
	sum := sha256.Sum256(text)
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}
