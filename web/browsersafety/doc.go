// Package browsersafety keeps a web page the operator visits from using
// the service (DESIGN.md, "Browser safety"): the Host allowlist against
// DNS rebinding, the Origin check on state-changing requests and
// WebSocket upgrades, JSON-only bodies (guard.go), and the headers that
// keep the service's pages from being framed, sniffed or given script
// they did not ship (headers.go).
//
// It is the standard library only and knows nothing of routes: web runs
// Guard.Check before every route and maps its refusals (ErrForbidden,
// ErrUnsupportedMediaType, ErrUnreadableBody) to statuses, sets
// SetHeaders on every response, and the pages with inline script set
// PageCSP. cmd parses the settings with ParseHosts and ParseOrigins:
//
//	g := browsersafety.New(keyless, publicHosts, allowedOrigins)
//	if err := g.Check(r); err != nil { /* answer 403, 415 or 400 */ }
package browsersafety
