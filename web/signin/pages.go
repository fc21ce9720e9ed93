package signin

import (
	"html/template"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/web/browsersafety"
)

// result is what the callback page shows and tells its opener: no
// secret, no code and no state.
type result struct {
	OK      bool
	Server  string
	Message string
}

// pageTemplate is the callback's page. html/template escapes the
// result for each context. Its script is a file of its own
// (resultScriptText), as a strict Content-Security-Policy wants: it
// reads the result from the page and tells it only to this service's own
// origin.
var pageTemplate = template.Must(template.New("signin").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="referrer" content="no-referrer">
<title>{{if .OK}}Signed in{{else}}Sign-in failed{{end}}</title>
</head>
<body>
<h1 id="signin-result" data-ok="{{.OK}}" data-server="{{.Server}}">{{if .OK}}Signed in{{else}}Sign-in failed{{end}}</h1>
<p id="signin-message">{{.Message}}</p>
<p>You can close this window.</p>
<script src="` + resultScriptPath + `"></script>
</body>
</html>
`))

// resultScriptPath serves resultScriptText.
const resultScriptPath = "/oauth/signin-result.js"

// resultScriptText tells the window that opened the callback's page how
// the sign-in went (postMessage, to this origin only) and closes the page.
const resultScriptText = `(function () {
  var el = document.getElementById("signin-result");
  var msg = document.getElementById("signin-message");
  if (!el) return;
  var result = {
    type: "elysia-signin",
    ok: el.dataset.ok === "true",
    server: el.dataset.server || "",
    message: msg ? msg.textContent : "",
  };
  try {
    if (window.opener && !window.opener.closed) window.opener.postMessage(result, window.location.origin);
  } catch (e) {}
  if (window.opener) setTimeout(function () { window.close(); }, result.ok ? 300 : 4000);
})();
`

// resultScript serves resultScriptText.
func resultScript(c *gin.Context) {
	c.Header("Cache-Control", "public, max-age=300")
	c.Header("X-Content-Type-Options", "nosniff")
	c.Data(http.StatusOK, "text/javascript; charset=utf-8", []byte(resultScriptText))
}

// confirmTemplate is the page GET /oauth/start/:server answers: a
// form that POSTs the start, no script. html/template escapes the server,
// the user and the action for their contexts.
var confirmTemplate = template.Must(template.New("confirm").Parse(`<!doctype html>
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

// page answers the callback's (and a navigated start's) page.
func (s *routes) page(c *gin.Context, status int, r result) {
	var b strings.Builder
	if err := pageTemplate.Execute(&b, r); err != nil {
		s.k.Fail(c, err, nil)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.Header("Referrer-Policy", "no-referrer")
	c.Data(status, "text/html; charset=utf-8", []byte(b.String()))
}

// confirmCSP is the Content-Security-Policy of the sign-in confirm page
// (GET /oauth/start/:server): browsersafety.UICSP, but its one form, whose POST is
// answered with a redirect to the authorization server, may end up there.
// Chromium checks form-action on every hop of a form's redirects, and the
// authorization server is https anywhere or http on loopback (the
// gateway's endpoint check). The page has no script, and html/template
// escapes all it shows, so no other form can appear on it.
var confirmCSP = browsersafety.PageCSP(nil, map[string]string{
	"form-action": "'self' https: http://127.0.0.1:* http://localhost:*",
})
