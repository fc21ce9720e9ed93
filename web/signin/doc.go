// Package signin serves the routes that sign users in to the MCP servers
// that ask for it and keep their own secrets (DESIGN.md, "Sign-in and
// per-user credentials"):
//
//   - POST /oauth/start/:server starts a sign-in: it sends the browser to
//     the server's authorization server (303), or, for a client that asks
//     for JSON, answers {"error", "url"} so that a page can open the URL in
//     a popup itself. The user signing in is the API key's; an admin key,
//     or any request when no keys are configured, names the user with
//     ?user=. The key is never taken from the URL. Being a POST, it passes
//     the Origin check: a page of another site cannot start sign-ins (which
//     probe the server, register clients and keep a pending sign-in each).
//     The sign-ins waiting are capped per user and in all (429).
//   - GET /oauth/start/:server changes nothing: it answers a page that asks
//     to confirm, with a form that POSTs the start (JSON clients get 405).
//   - GET /oauth/callback/:server is where the authorization server sends
//     the browser back: one redirect URI per server, and an answer that
//     comes back on another server's path than its sign-in's is refused
//     (authorization server mix-up). It needs no key (a redirect carries no
//     header): the state, unguessable, bound to the user who started and
//     good for one use, is the credential, and it only counts from the
//     browser that started the sign-in, which holds the sign-in's secret in
//     a cookie (see binding.go). So a sign-in link someone started
//     cannot be finished by another person, whose account would then end
//     up under the starter's name. It answers a small HTML page that tells
//     the window that opened it how the sign-in went and closes itself.
//     GET /oauth/callback, the one path of before, refuses with a page
//     that says so.
//   - DELETE /oauth/:server signs the user out.
//   - PUT and DELETE /users/:user_id/secrets/:name set and forget a user's
//     own secret; nothing reads one back.
//
// It sits on top of package web: Routes returns a web.RouteSet, whose
// routes authenticate, read bodies and map errors with web's Kit, and
// whose sentinels are web.Errors. cmd wires it with its adapters over the
// gateways' OAuth client and the encrypted secret store:
//
//	web.Options{Routes: []web.RouteSet{signin.Routes(signin.Deps{SignIns: s, Secrets: u})}}
//
// It imports web and web/browsersafety (for the pages' headers); web does
// not import it.
package signin
