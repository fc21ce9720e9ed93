package web

import (
	"html/template"
	"strings"

	"github.com/gin-gonic/gin"
)

// signInResult is what the callback page tells its opener: no secret, no
// code and no state.
type signInResult struct {
	Type    string `json:"type"`
	OK      bool   `json:"ok"`
	Server  string `json:"server"`
	Message string `json:"message"`
}

// signInPageTemplate is the callback's page. html/template escapes the
// result for each context, the script's JSON included; the message goes
// only to this service's own origin.
var signInPageTemplate = template.Must(template.New("signin").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="referrer" content="no-referrer">
<title>{{if .OK}}Signed in{{else}}Sign-in failed{{end}}</title>
<style>body{font:16px system-ui,sans-serif;margin:3rem auto;max-width:32rem;padding:0 1rem}</style>
</head>
<body>
<h1 id="signin-result" data-ok="{{.OK}}">{{if .OK}}Signed in{{else}}Sign-in failed{{end}}</h1>
<p id="signin-message">{{.Message}}</p>
<p>You can close this window.</p>
<script>
(function () {
  var result = {{.}};
  try {
    if (window.opener && !window.opener.closed) window.opener.postMessage(result, window.location.origin);
  } catch (e) {}
  if (window.opener) setTimeout(function () { window.close(); }, result.ok ? 300 : 4000);
})();
</script>
</body>
</html>
`))

// signInConfirmTemplate is the page GET /oauth/start/:server answers: a
// form that POSTs the start, no script. html/template escapes the server,
// the user and the action for their contexts.
var signInConfirmTemplate = template.Must(template.New("confirm").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="referrer" content="same-origin">
<title>Sign in to {{.Server}}</title>
</head>
<body>
<h1>Sign in to {{.Server}}</h1>
<p>Elysia will send you to the sign-in page of the MCP server <strong id="signin-server">{{.Server}}</strong>, for the user <strong id="signin-user">{{.User}}</strong>. Continue only if you asked for this.</p>
<form id="signin-confirm" method="post" action="{{.Action}}">
<button type="submit">Continue to sign in</button>
</form>
</body>
</html>
`))

// signInPage answers the callback's (and a navigated start's) page.
func (s *Server) signInPage(c *gin.Context, status int, r signInResult) {
	r.Type = "elysia-signin"
	var b strings.Builder
	if err := signInPageTemplate.Execute(&b, r); err != nil {
		s.fail(c, err, nil)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.Header("Referrer-Policy", "no-referrer")
	c.Data(status, "text/html; charset=utf-8", []byte(b.String()))
}
