package web

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"unicode"

	"github.com/gin-gonic/gin"
)

// Sign-in (DESIGN.md, "Sign-in and per-user credentials"):
//
//   - GET /oauth/start/:server sends the browser to the server's
//     authorization server (302), or, for a client that asks for JSON,
//     answers {"error", "url"} so that a page can open the URL in a popup
//     itself. The user signing in is the API key's; an admin key, or any
//     request when no keys are configured, names the user with ?user=. The
//     key is never taken from the URL: the UI fetches the URL with its
//     bearer header and then navigates its popup to it.
//   - GET /oauth/callback is where the authorization server sends the
//     browser back. It needs no key (a redirect carries no header): the
//     state, unguessable, bound to the user who started and good for one
//     use, is the credential, and it only counts from the browser that
//     started the sign-in: the start sets a cookie (HttpOnly, SameSite=Lax,
//     path /oauth/callback, ten minutes) holding the state's SHA-256, which
//     the callback must bring. So a sign-in link someone started cannot be
//     finished by another person, whose account would then end up under
//     the starter's name. It answers a small HTML page that tells the
//     window that opened it how the sign-in went and closes itself.
//   - DELETE /oauth/:server signs the user out.
//   - PUT and DELETE /users/:user_id/secrets/:name set and forget a user's
//     own secret; nothing reads one back.

// signInRoutes registers the sign-in and user-secret routes.
func (s *Server) signInRoutes(e *gin.Engine) {
	e.GET("/oauth/start/:server", s.oauthStart)
	e.GET("/oauth/callback", s.oauthCallback)
	e.DELETE("/oauth/:server", s.oauthSignOut)
	e.PUT("/users/:user_id/secrets/:name", s.requireUser, s.putSecret)
	e.DELETE("/users/:user_id/secrets/:name", s.requireUser, s.deleteSecret)
}

// errNoSignIns answers the sign-in routes of a Server built without
// Deps.SignIns.
var errNoSignIns = &requestError{http.StatusNotFound, "sign-in is not available on this service"}

// errNoSecrets answers the secret routes of a Server built without
// Deps.Secrets.
var errNoSecrets = &requestError{http.StatusNotFound, "user secrets are not available on this service"}

// signInUser authenticates the request and returns the user it acts for:
// the key's user, or for an admin key (and without keys) the user named
// by ?user=. On failure it has answered.
func (s *Server) signInUser(c *gin.Context) (string, bool) {
	principal, ok := s.authenticate(c)
	if !ok {
		s.fail(c, errUnauthorized, object{kv("url", "")})
		return "", false
	}
	user := c.Query("user")
	switch {
	case principal != AdminUser && user != "" && user != principal:
		s.fail(c, forbidden(user), object{kv("url", "")})
		return "", false
	case principal != AdminUser:
		user = principal
	case user == "":
		s.fail(c, badRequest("name the user signing in with ?user="), object{kv("url", "")})
		return "", false
	}
	if err := checkID("user", user); err != nil {
		s.fail(c, err, object{kv("url", "")})
		return "", false
	}
	setPrincipal(c, principal)
	return user, true
}

// wantsJSON reports whether the client asked for JSON rather than a
// redirect or a page.
func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}

func (s *Server) oauthStart(c *gin.Context) {
	user, authorized := s.signInUser(c)
	if !authorized {
		return
	}
	if s.deps.SignIns == nil {
		s.fail(c, errNoSignIns, object{kv("url", "")})
		return
	}
	redirect, err := s.callbackURL(c.Request)
	if err == nil {
		var authURL string
		authURL, err = s.deps.SignIns.StartSignIn(c.Request.Context(), c.Param("server"), user, redirect)
		if err == nil {
			c.Header("Cache-Control", "no-store")
			s.bindSignIn(c, authURL, strings.HasPrefix(redirect, "https:"))
			if wantsJSON(c.Request) {
				writeJSON(c, http.StatusOK, ok(kv("url", authURL)))
				return
			}
			c.Redirect(http.StatusFound, authURL)
			return
		}
	}
	if wantsJSON(c.Request) {
		s.failServer(c, err, object{kv("url", "")})
		return
	}
	status, msg := s.signInFailure(c.Request.Context(), err)
	s.signInPage(c, status, signInResult{Server: c.Param("server"), Message: msg})
}

// callbackURL is the redirect URI of a sign-in started by r: this
// service's /oauth/callback under the name r reached it by, when that is a
// loopback name or a listed public host (--public-host), so that the
// authorization server never sends a code to a name the service does not
// own. A public host is https unless X-Forwarded-Proto says http.
func (s *Server) callbackURL(r *http.Request) (string, error) {
	name, port := splitHost(r.Host)
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if isLoopbackName(name) {
		return scheme + "://" + r.Host + "/oauth/callback", nil
	}
	for _, h := range s.hosts.public {
		if pn, pp := splitHost(h); pn == name && (pp == "" || pp == port) {
			if r.Header.Get("X-Forwarded-Proto") != "http" {
				scheme = "https"
			}
			return scheme + "://" + r.Host + "/oauth/callback", nil
		}
	}
	return "", badRequest("cannot sign in through " + r.Host + ": the authorization server must send the browser back to a name this service owns; " +
		"use a loopback address, or start elysia serve with --public-host " + name)
}

func (s *Server) oauthCallback(c *gin.Context) {
	q := c.Request.URL.Query()
	if code := q.Get("error"); code != "" {
		msg := "the authorization server did not sign you in: " + cleanText(code, 64)
		if d := q.Get("error_description"); d != "" {
			msg += " (" + cleanText(d, 300) + ")"
		}
		s.signInPage(c, http.StatusBadRequest, signInResult{Message: msg})
		return
	}
	state, code := q.Get("state"), q.Get("code")
	if state == "" || code == "" {
		s.signInPage(c, http.StatusBadRequest, signInResult{Message: "this is not an authorization server's answer: the callback needs state and code"})
		return
	}
	if s.deps.SignIns == nil {
		s.signInPage(c, http.StatusNotFound, signInResult{Message: errNoSignIns.msg})
		return
	}
	if !signInBound(c, state) {
		s.signInPage(c, http.StatusBadRequest, signInResult{Message: "this sign-in was not started in this browser " +
			"(or its cookie expired): start it again from the page, in the browser you sign in with"})
		return
	}
	server, user, err := s.deps.SignIns.FinishSignIn(c.Request.Context(), state, code, q.Get("iss"))
	if err != nil {
		status, msg := s.signInFailure(c.Request.Context(), err)
		s.signInPage(c, status, signInResult{Server: server, Message: msg})
		return
	}
	s.logger.InfoContext(c.Request.Context(), "signed in", slog.String("server", server), slog.String("user_id", user))
	if s.hub != nil {
		s.hub.publish(user, topicServers)
	}
	s.signInPage(c, http.StatusOK, signInResult{OK: true, Server: server, Message: "Signed in to " + server + "."})
}

// signInCookieTTL is how long a started sign-in's cookie lives: as long as
// the sign-in waits for its callback.
const signInCookieTTL = 600 // seconds

// signInCookie is the name and value of the cookie that binds the sign-in
// of state to the browser that started it: one cookie per sign-in, so that
// several can be under way, holding the state's SHA-256 (the state itself
// never goes into a cookie).
func signInCookie(state string) (name, value string) {
	sum := sha256.Sum256([]byte(state))
	v := hex.EncodeToString(sum[:])
	return "elysia_signin_" + v[:16], v
}

// bindSignIn sets the cookie of the sign-in whose authorization URL is
// authURL. secure is set when the callback is https.
func (s *Server) bindSignIn(c *gin.Context, authURL string, secure bool) {
	u, err := url.Parse(authURL)
	state := ""
	if err == nil {
		state = u.Query().Get("state")
	}
	if state == "" {
		return // the callback then refuses it: nothing to bind
	}
	name, value := signInCookie(state)
	http.SetCookie(c.Writer, &http.Cookie{Name: name, Value: value, Path: "/oauth/callback", MaxAge: signInCookieTTL,
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode})
}

// signInBound reports whether the callback's browser holds the cookie of
// the sign-in of state, and clears it.
func signInBound(c *gin.Context, state string) bool {
	name, want := signInCookie(state)
	got, err := c.Cookie(name)
	http.SetCookie(c.Writer, &http.Cookie{Name: name, Value: "", Path: "/oauth/callback", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteLaxMode})
	return err == nil && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// signInFailure returns the status and the message shown for a failed
// start or callback: as failServer shows them (an unclassified error is
// the server's or its authorization server's, 502, with its own text).
func (s *Server) signInFailure(ctx context.Context, err error) (int, string) {
	status := serverStatus(err)
	if status >= 500 {
		s.logger.WarnContext(ctx, "sign-in failed", slog.Int("status", status), slog.Any("err", err))
	}
	if errors.Is(err, ErrUnknownState) {
		return status, "this sign-in link is unknown, expired or already used; start the sign-in again"
	}
	return status, err.Error()
}

func (s *Server) oauthSignOut(c *gin.Context) {
	user, ok := s.signInUser(c)
	if !ok {
		return
	}
	if s.deps.SignIns == nil {
		s.fail(c, errNoSignIns, nil)
		return
	}
	if err := s.deps.SignIns.SignOut(c.Request.Context(), c.Param("server"), user); err != nil {
		s.failServer(c, err, nil)
		return
	}
	c.Status(http.StatusNoContent)
}

// maxSecretName bounds a secret's name.
const maxSecretName = 128

// checkSecretName accepts the names ${user:NAME} can hold: letters,
// digits, "_", "-" and ".".
func checkSecretName(name string) error {
	if name == "" || len(name) > maxSecretName || strings.ContainsFunc(name, func(r rune) bool {
		return r > unicode.MaxASCII || (r != '_' && r != '-' && r != '.' && !unicode.IsLetter(r) && !unicode.IsDigit(r))
	}) {
		return badRequest("a secret's name is 1 to 128 letters, digits, '_', '-' or '.'")
	}
	return nil
}

func (s *Server) putSecret(c *gin.Context) {
	name := c.Param("name")
	if err := checkSecretName(name); err != nil {
		s.fail(c, err, nil)
		return
	}
	var body struct {
		Value *string `json:"value"`
	}
	if err := s.decode(c, &body, false, "value"); err != nil {
		s.fail(c, err, nil)
		return
	}
	if body.Value == nil || *body.Value == "" {
		s.fail(c, badRequest(`"value" must be a non-empty string`), nil)
		return
	}
	if s.deps.Secrets == nil {
		s.fail(c, errNoSecrets, nil)
		return
	}
	if err := s.deps.Secrets.PutSecret(c.Request.Context(), c.Param("user_id"), name, *body.Value); err != nil {
		s.fail(c, err, nil)
		return
	}
	c.Status(http.StatusNoContent)
}

func (s *Server) deleteSecret(c *gin.Context) {
	name := c.Param("name")
	if err := checkSecretName(name); err != nil {
		s.fail(c, err, nil)
		return
	}
	if s.deps.Secrets == nil {
		s.fail(c, errNoSecrets, nil)
		return
	}
	if err := s.deps.Secrets.DeleteSecret(c.Request.Context(), c.Param("user_id"), name); err != nil {
		s.fail(c, err, nil)
		return
	}
	c.Status(http.StatusNoContent)
}

// serversFor is the servers' status as user sees it, when Servers can
// tell (UserServers) and user is one user; else the shared status.
func (s *Server) serversFor(ctx context.Context, user string) (ServersStatus, error) {
	if us, ok := s.deps.Servers.(UserServers); ok && user != "" && user != AdminUser {
		return us.ServersFor(ctx, user)
	}
	return s.deps.Servers.Servers(ctx)
}

// askingUser is the user /api/servers shows the status for: the key's
// user, or for an admin key (and without keys) the one ?user= names ("" for
// none). A user key asking for another user is refused (403).
func askingUser(c *gin.Context) (string, error) {
	principal, _ := c.Get(principalKey)
	p, _ := principal.(string)
	q := c.Query("user")
	if p != AdminUser {
		if q != "" && q != p {
			return "", forbidden(q)
		}
		return p, nil
	}
	if q != "" {
		if err := checkID("user", q); err != nil {
			return "", err
		}
	}
	return q, nil
}

// cleanText makes text from a URL fit to show: control characters out,
// at most limit bytes.
func cleanText(text string, limit int) string {
	text = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, text)
	if len(text) > limit {
		text = strings.ToValidUTF8(text[:limit], "") + "…"
	}
	return text
}

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
	c.Header("Content-Security-Policy", pageCSP([]byte(b.String()), nil)) // its one script and style, by hash
	c.Data(status, "text/html; charset=utf-8", []byte(b.String()))
}
