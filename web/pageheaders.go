package web

import (
	"crypto/sha256"
	"encoding/base64"
	"regexp"
	"strings"

	"github.com/gin-gonic/gin"
)

// uiCSP is the Content-Security-Policy of every response but the few pages
// that set their own (pageCSP): the project's UI runs only its own module
// scripts and style sheet, with no inline script, no eval and no inline
// <style>; it talks only to this origin (fetch and the WebSocket), shows
// only its own and data: images, and may not be framed. A renderer bug
// that let markup through would find no script it may run and no host it
// may send a key to.
const uiCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"media-src 'self' data:; font-src 'self'; connect-src 'self'; manifest-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"

// securityHeaders is the middleware that sets, on every response, the
// headers that keep a page of this service from being framed, sniffed or
// given script it did not ship: Content-Security-Policy (uiCSP; a page with
// inline script replaces it with pageCSP), X-Frame-Options DENY for
// browsers without frame-ancestors, nosniff, and a referrer policy that
// sends no path to another site.
func securityHeaders(c *gin.Context) {
	h := c.Writer.Header()
	h.Set("Content-Security-Policy", uiCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	c.Next()
}

// inlineScript and inlineStyle find a page's inline <script> and <style>
// elements: their attributes and their text. The pages are the service's
// own or the operator's frontend build, not hostile input.
var (
	inlineScript = regexp.MustCompile(`(?is)<script(\s[^>]*)?>(.*?)</script\s*>`)
	inlineStyle  = regexp.MustCompile(`(?is)<style(\s[^>]*)?>(.*?)</style\s*>`)
	srcAttr      = regexp.MustCompile(`(?i)\ssrc\s*=`)
)

// pageCSP is the Content-Security-Policy of an HTML page that carries
// inline scripts (the sign-in callback page; the frontend build's pages
// with frontendOverride): uiCSP's rules, with each inline <script> and <style> of page
// allowed by its SHA-256 hash and nothing else inline. override replaces
// the source list of the directives it names (the frontend's workers and
// injected styles).
func pageCSP(page []byte, override map[string]string) string {
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

// confirmCSP is the Content-Security-Policy of the sign-in confirm page
// (GET /oauth/start/:server): uiCSP, but its one form, whose POST is
// answered with a redirect to the authorization server, may end up there.
// Chromium checks form-action on every hop of a form's redirects, and the
// authorization server is https anywhere or http on loopback (the
// gateway's endpoint check). The page has no script, and html/template
// escapes all it shows, so no other form can appear on it.
var confirmCSP = pageCSP(nil, map[string]string{
	"form-action": "'self' https: http://127.0.0.1:* http://localhost:*",
})

// frontendOverride is what Elysia's Next.js build needs beyond pageCSP.
// Its page inserts an inline script at run time (Google Analytics' init,
// which its start-up waits for), so no hash list can allow it: its
// scripts get 'unsafe-inline', but still no eval, no other host, no
// connection but to this origin, no framing, no <object> and no <base>.
// Its components inject <style> elements (scroll locks, toasts), its code
// highlighter starts a worker, and its WebGL scene loads blob: textures.
var frontendOverride = map[string]string{
	"script-src": "'self' 'unsafe-inline'",
	"style-src":  "'self' 'unsafe-inline'",
	"img-src":    "'self' data: blob:",
	"media-src":  "'self' data: blob:",
	"font-src":   "'self' data:",
	"worker-src": "'self' blob:",
}

// frontendCSP is the Content-Security-Policy of the frontend build's
// pages.
var frontendCSP = pageCSP(nil, frontendOverride)
