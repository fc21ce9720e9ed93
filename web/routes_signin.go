package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"unicode"

	"github.com/gin-gonic/gin"
)

// Sign-in (DESIGN.md, "Sign-in and per-user credentials"):
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
//     a cookie (see signin_binding.go). So a sign-in link someone started
//     cannot be finished by another person, whose account would then end
//     up under the starter's name. It answers a small HTML page that tells
//     the window that opened it how the sign-in went and closes itself.
//     GET /oauth/callback, the one path of before, refuses with a page
//     that says so.
//   - DELETE /oauth/:server signs the user out.
//   - PUT and DELETE /users/:user_id/secrets/:name set and forget a user's
//     own secret; nothing reads one back.

// signInRoutes registers the sign-in and user-secret routes.
func (s *Server) signInRoutes(e *gin.Engine) {
	e.GET("/oauth/start/:server", s.oauthConfirm)
	e.POST("/oauth/start/:server", s.oauthStart)
	e.GET("/oauth/callback/:server", s.oauthCallback)
	e.GET("/oauth/callback", s.oauthOldCallback)
	e.GET(signInResultScriptPath, signInScript)
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

// oauthConfirm answers the page that asks to confirm a sign-in: a GET
// (a link, an image, a navigation from another site) starts nothing.
func (s *Server) oauthConfirm(c *gin.Context) {
	user, authorized := s.signInUser(c)
	if !authorized {
		return
	}
	if wantsJSON(c.Request) {
		c.Header("Allow", http.MethodPost)
		s.fail(c, &requestError{http.StatusMethodNotAllowed, "start a sign-in with POST /oauth/start/" +
			url.PathEscape(c.Param("server")) + "; a GET starts nothing"}, object{kv("url", "")})
		return
	}
	action := (&url.URL{Path: "/oauth/start/" + c.Param("server"), RawQuery: url.Values{"user": {user}}.Encode()}).String()
	var b strings.Builder
	if err := signInConfirmTemplate.Execute(&b, struct{ Server, User, Action string }{c.Param("server"), user, action}); err != nil {
		s.fail(c, err, nil)
		return
	}
	c.Header("Cache-Control", "no-store")
	// Not no-referrer: a form POST from a no-referrer page carries
	// "Origin: null", which the Origin check refuses.
	c.Header("Referrer-Policy", "same-origin")
	// Never in a frame: a page of another site must not get a click on
	// the button by showing it under something else.
	c.Header("X-Frame-Options", "DENY")
	c.Header("Content-Security-Policy", confirmCSP)
	c.Data(http.StatusOK, "text/html; charset=utf-8", []byte(b.String()))
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
	origin, err := s.callbackOrigin(c.Request)
	if err == nil {
		secret, binding := newSignInSecret()
		var authURL, server string
		authURL, server, err = s.deps.SignIns.StartSignIn(c.Request.Context(),
			SignInStart{Server: c.Param("server"), User: user, CallbackOrigin: origin, Binding: binding})
		if err == nil {
			c.Header("Cache-Control", "no-store")
			http.SetCookie(c.Writer, signInCookie(server, origin, secret))
			if wantsJSON(c.Request) {
				writeJSON(c, http.StatusOK, ok(kv("url", authURL)))
				return
			}
			c.Redirect(http.StatusSeeOther, authURL)
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

// callbackOrigin is the scheme://host of the redirect URI of a sign-in
// started by r: this service under the name r reached it by, when that is
// a loopback name or a listed public host (--public-host), so that the
// authorization server never sends a code to a name the service does not
// own. A public host is https unless X-Forwarded-Proto says http. The
// path follows: /oauth/callback/<server> (mcpauth.CallbackPath, which a
// terminal sign-in listens on too).
func (s *Server) callbackOrigin(r *http.Request) (string, error) {
	origin, err := s.guard.OwnOrigin(r)
	if err != nil {
		return "", badRequest("cannot sign in through " + r.Host + ": the authorization server must send the browser back to a name this service owns; " + err.Error())
	}
	return origin, nil
}

// oauthOldCallback answers the one callback path of before, which no
// sign-in uses now: an answer there names no server.
func (s *Server) oauthOldCallback(c *gin.Context) {
	s.signInPage(c, http.StatusBadRequest, signInResult{Message: "this sign-in came back to /oauth/callback, which takes no sign-ins: " +
		"each server has its own callback, /oauth/callback/<server>; start the sign-in again " +
		"(with a client registered in advance, register that redirect URI with the authorization server)"})
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
	cb := SignInCallback{Server: c.Param("server"), State: state, Code: code, Iss: q.Get("iss"),
		Binding: s.signInBinding(c, c.Param("server"))}
	server, user, err := s.deps.SignIns.FinishSignIn(c.Request.Context(), cb)
	if err != nil {
		status, msg := s.signInFailure(c.Request.Context(), err)
		s.signInPage(c, status, signInResult{Server: server, Message: msg})
		return
	}
	s.logger.InfoContext(c.Request.Context(), "signed in", slog.String("server", server), slog.String(logKeyUserID, user))
	if s.hub != nil {
		s.hub.publish(user, topicServers)
	}
	s.signInPage(c, http.StatusOK, signInResult{OK: true, Server: server, Message: "Signed in to " + server + "."})
}

// signInFailure returns the status and the message shown for a failed
// start or callback: as failServer shows them (an unclassified error is
// the server's or its authorization server's, 502, with its own text).
func (s *Server) signInFailure(ctx context.Context, err error) (int, string) {
	status := serverStatus(err)
	if status >= 500 {
		s.logger.WarnContext(ctx, "sign-in failed", slog.Int(logKeyStatus, status), slog.Any(logKeyErr, err))
	}
	switch {
	case errors.Is(err, ErrUnknownState):
		return status, "this sign-in link is unknown, expired or already used; start the sign-in again"
	case errors.Is(err, ErrSignInNotBound):
		return status, "this sign-in was not started in this browser (or its cookie expired): " +
			"start it again from the page, in the browser you sign in with"
	case errors.Is(err, ErrWrongCallback):
		return status, "the authorization server answered on another server's callback than the sign-in's " +
			"(an authorization server mix-up); the sign-in is void"
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

// maxSecretValue bounds a secret's value: a token or a password, not a
// file. A longer one is refused (413) and nothing is stored.
const maxSecretValue = 16 << 10

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
	if len(*body.Value) > maxSecretValue {
		s.fail(c, &requestError{http.StatusRequestEntityTooLarge, fmt.Sprintf(
			"a secret's value is at most %d bytes (16 KiB); this one is %d", maxSecretValue, len(*body.Value))}, nil)
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
