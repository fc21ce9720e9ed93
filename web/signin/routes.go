package signin

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

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/web"
)

// object is a response body with its keys in order; field is one of its
// members.
type (
	object = tools.Object
	field  = tools.Member
)

// kv is one member of a response body.
func kv(key string, value any) field { return field{Key: key, Value: value} }

// Deps are what the routes sign users in with and keep their secrets in.
type Deps struct {
	// SignIns signs users in to the MCP servers that ask for it. Nil
	// means none: the /oauth routes answer 404.
	SignIns SignIns
	// Secrets keeps users' own secrets. Nil means none: the secret routes
	// answer 404.
	Secrets UserSecrets
}

// routes holds the Kit the handlers answer through and their Deps.
type routes struct {
	k *web.Kit
	d Deps
}

// Routes returns the web.RouteSet of the sign-in and user-secret routes
// over d; pass it in web.Options.Routes.
func Routes(d Deps) web.RouteSet {
	return func(k *web.Kit) {
		s := &routes{k: k, d: d}
		k.Handle(http.MethodGet, "/oauth/start/:server", s.oauthConfirm)
		k.Handle(http.MethodPost, "/oauth/start/:server", s.oauthStart)
		k.Handle(http.MethodGet, "/oauth/callback/:server", s.oauthCallback)
		k.Handle(http.MethodGet, "/oauth/callback", s.oauthOldCallback)
		k.Handle(http.MethodGet, resultScriptPath, resultScript)
		k.Handle(http.MethodDelete, "/oauth/:server", s.oauthSignOut)
		k.Handle(http.MethodPut, "/users/:user_id/secrets/:name", k.RequireUser, s.putSecret)
		k.Handle(http.MethodDelete, "/users/:user_id/secrets/:name", k.RequireUser, s.deleteSecret)
	}
}

// errNoSignIns answers the sign-in routes without Deps.SignIns.
var errNoSignIns = web.Error(http.StatusNotFound, "sign-in is not available on this service")

// errNoSecrets answers the secret routes without Deps.Secrets.
var errNoSecrets = web.Error(http.StatusNotFound, "user secrets are not available on this service")

// signInUser authenticates the request and returns the user it acts for:
// the key's user, or for an admin key (and without keys) the user named
// by ?user=. On failure it has answered.
func (s *routes) signInUser(c *gin.Context) (string, bool) {
	principal, ok := s.k.Authenticate(c)
	if !ok {
		s.k.Fail(c, web.ErrUnauthorized, object{kv("url", "")})
		return "", false
	}
	user := c.Query("user")
	switch {
	case principal != web.AdminUser && user != "" && user != principal:
		s.k.Fail(c, s.k.Forbidden(user), object{kv("url", "")})
		return "", false
	case principal != web.AdminUser:
		user = principal
	case user == "":
		s.k.Fail(c, web.BadRequest("name the user signing in with ?user="), object{kv("url", "")})
		return "", false
	}
	if err := s.k.CheckIDs("user", user); err != nil {
		s.k.Fail(c, err, object{kv("url", "")})
		return "", false
	}
	return user, true
}

// wantsJSON reports whether the client asked for JSON rather than a
// redirect or a page.
func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}

// oauthConfirm answers the page that asks to confirm a sign-in: a GET
// (a link, an image, a navigation from another site) starts nothing.
func (s *routes) oauthConfirm(c *gin.Context) {
	user, authorized := s.signInUser(c)
	if !authorized {
		return
	}
	if wantsJSON(c.Request) {
		c.Header("Allow", http.MethodPost)
		s.k.Fail(c, web.Error(http.StatusMethodNotAllowed, "start a sign-in with POST /oauth/start/"+
			url.PathEscape(c.Param("server"))+"; a GET starts nothing"), object{kv("url", "")})
		return
	}
	action := (&url.URL{Path: "/oauth/start/" + c.Param("server"), RawQuery: url.Values{"user": {user}}.Encode()}).String()
	var b strings.Builder
	if err := confirmTemplate.Execute(&b, struct{ Server, User, Action string }{c.Param("server"), user, action}); err != nil {
		s.k.Fail(c, err, nil)
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

func (s *routes) oauthStart(c *gin.Context) {
	user, authorized := s.signInUser(c)
	if !authorized {
		return
	}
	if s.d.SignIns == nil {
		s.k.Fail(c, errNoSignIns, object{kv("url", "")})
		return
	}
	origin, err := s.callbackOrigin(c.Request)
	if err == nil {
		secret, binding := newSecret()
		var authURL, server string
		authURL, server, err = s.d.SignIns.StartSignIn(c.Request.Context(),
			Start{Server: c.Param("server"), User: user, CallbackOrigin: origin, Binding: binding})
		if err == nil {
			c.Header("Cache-Control", "no-store")
			http.SetCookie(c.Writer, cookie(server, origin, secret))
			if wantsJSON(c.Request) {
				s.k.WriteJSON(c, http.StatusOK, web.OK(kv("url", authURL)))
				return
			}
			c.Redirect(http.StatusSeeOther, authURL)
			return
		}
	}
	if wantsJSON(c.Request) {
		s.k.FailServer(c, err, object{kv("url", "")})
		return
	}
	status, msg := s.signInFailure(c.Request.Context(), err)
	s.page(c, status, result{Server: c.Param("server"), Message: msg})
}

// callbackOrigin is the scheme://host of the redirect URI of a sign-in
// started by r: this service under the name r reached it by, when that is
// a loopback name or a listed public host (--public-host), so that the
// authorization server never sends a code to a name the service does not
// own. A public host is https unless X-Forwarded-Proto says http. The
// path follows: /oauth/callback/<server> (mcpauth.CallbackPath, which a
// terminal sign-in listens on too).
func (s *routes) callbackOrigin(r *http.Request) (string, error) {
	origin, err := s.k.OwnOrigin(r)
	if err != nil {
		return "", web.BadRequest("cannot sign in through " + r.Host + ": the authorization server must send the browser back to a name this service owns; " + err.Error())
	}
	return origin, nil
}

// oauthOldCallback answers the one callback path of before, which no
// sign-in uses now: an answer there names no server.
func (s *routes) oauthOldCallback(c *gin.Context) {
	s.page(c, http.StatusBadRequest, result{Message: "this sign-in came back to /oauth/callback, which takes no sign-ins: " +
		"each server has its own callback, /oauth/callback/<server>; start the sign-in again " +
		"(with a client registered in advance, register that redirect URI with the authorization server)"})
}

func (s *routes) oauthCallback(c *gin.Context) {
	q := c.Request.URL.Query()
	if code := q.Get("error"); code != "" {
		msg := "the authorization server did not sign you in: " + cleanText(code, 64)
		if d := q.Get("error_description"); d != "" {
			msg += " (" + cleanText(d, 300) + ")"
		}
		s.page(c, http.StatusBadRequest, result{Message: msg})
		return
	}
	state, code := q.Get("state"), q.Get("code")
	if state == "" || code == "" {
		s.page(c, http.StatusBadRequest, result{Message: "this is not an authorization server's answer: the callback needs state and code"})
		return
	}
	if s.d.SignIns == nil {
		s.page(c, http.StatusNotFound, result{Message: errNoSignIns.Error()})
		return
	}
	cb := Callback{Server: c.Param("server"), State: state, Code: code, Iss: q.Get("iss"),
		Binding: s.binding(c, c.Param("server"))}
	server, user, err := s.d.SignIns.FinishSignIn(c.Request.Context(), cb)
	if err != nil {
		status, msg := s.signInFailure(c.Request.Context(), err)
		s.page(c, status, result{Server: server, Message: msg})
		return
	}
	s.k.Logger().InfoContext(c.Request.Context(), "signed in", slog.String(logKeyServer, server), slog.String(logKeyUserID, user))
	s.k.Changed(web.Change{User: user, ServersOnly: true})
	s.page(c, http.StatusOK, result{OK: true, Server: server, Message: "Signed in to " + server + "."})
}

// signInFailure returns the status and the message shown for a failed
// start or callback: as failServer shows them (an unclassified error is
// the server's or its authorization server's, 502, with its own text).
func (s *routes) signInFailure(ctx context.Context, err error) (int, string) {
	status := web.StatusOfServerError(err)
	if status >= 500 {
		s.k.Logger().WarnContext(ctx, "sign-in failed", slog.Int(logKeyStatus, status), slog.Any(logKeyErr, err))
	}
	switch {
	case errors.Is(err, ErrUnknownState):
		return status, "this sign-in link is unknown, expired or already used; start the sign-in again"
	case errors.Is(err, ErrNotBound):
		return status, "this sign-in was not started in this browser (or its cookie expired): " +
			"start it again from the page, in the browser you sign in with"
	case errors.Is(err, ErrWrongCallback):
		return status, "the authorization server answered on another server's callback than the sign-in's " +
			"(an authorization server mix-up); the sign-in is void"
	}
	return status, err.Error()
}

func (s *routes) oauthSignOut(c *gin.Context) {
	user, ok := s.signInUser(c)
	if !ok {
		return
	}
	if s.d.SignIns == nil {
		s.k.Fail(c, errNoSignIns, nil)
		return
	}
	if err := s.d.SignIns.SignOut(c.Request.Context(), c.Param("server"), user); err != nil {
		s.k.FailServer(c, err, nil)
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
		return web.BadRequest("a secret's name is 1 to 128 letters, digits, '_', '-' or '.'")
	}
	return nil
}

func (s *routes) putSecret(c *gin.Context) {
	name := c.Param("name")
	if err := checkSecretName(name); err != nil {
		s.k.Fail(c, err, nil)
		return
	}
	var body struct {
		Value *string `json:"value"`
	}
	if err := s.k.Decode(c, &body, false, "value"); err != nil {
		s.k.Fail(c, err, nil)
		return
	}
	if body.Value == nil || *body.Value == "" {
		s.k.Fail(c, web.BadRequest(`"value" must be a non-empty string`), nil)
		return
	}
	if len(*body.Value) > maxSecretValue {
		s.k.Fail(c, web.Error(http.StatusRequestEntityTooLarge, fmt.Sprintf(
			"a secret's value is at most %d bytes (16 KiB); this one is %d", maxSecretValue, len(*body.Value))), nil)
		return
	}
	if s.d.Secrets == nil {
		s.k.Fail(c, errNoSecrets, nil)
		return
	}
	if err := s.d.Secrets.PutSecret(c.Request.Context(), c.Param("user_id"), name, *body.Value); err != nil {
		s.k.Fail(c, err, nil)
		return
	}
	c.Status(http.StatusNoContent)
}

func (s *routes) deleteSecret(c *gin.Context) {
	name := c.Param("name")
	if err := checkSecretName(name); err != nil {
		s.k.Fail(c, err, nil)
		return
	}
	if s.d.Secrets == nil {
		s.k.Fail(c, errNoSecrets, nil)
		return
	}
	if err := s.d.Secrets.DeleteSecret(c.Request.Context(), c.Param("user_id"), name); err != nil {
		s.k.Fail(c, err, nil)
		return
	}
	c.Status(http.StatusNoContent)
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
