package signin

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/web/browsersafety"
)

// A started sign-in is bound to the browser that started it by a secret
// only that browser holds: a random value in a cookie, whose SHA-256 the
// service keeps with the pending sign-in. It is never derived from the
// state, which the authorization URL shows to every party of the sign-in
// (the authorization server, a link someone forwards), so knowing the state
// is not enough to finish the sign-in in another browser.
//
// The cookie is __Host- prefixed (Secure, Path=/, no Domain), so that on an
// https service a page of the same host over plain http cannot plant or
// overwrite it, nor a sibling subdomain at all. Browsers accept Secure
// cookies from https and from http://localhost and http://127.0.0.1
// (potentially trustworthy origins; TestBrowserSignIn and
// TestBrowserSignInConfirmPage check Chromium on 127.0.0.1). Cookies are
// not scoped by port, though, and a page on another port of 127.0.0.1 is
// just as trustworthy: there (checked with Chromium) it can still plant a
// __Host- cookie, such as a secret of a sign-in it started itself. A
// service reached over plain http by a public name (--public-host behind
// X-Forwarded-Proto: http) cannot set a Secure cookie at all: there the
// cookie has no prefix and may be planted by any page of that host. In
// every case the secret keeps out whoever only knows the state.

// signInCookiePrefix and signInCookieHostPrefix start the name of a
// sign-in cookie without and with the __Host- prefix.
const (
	signInCookiePrefix     = "elysia_signin_"
	signInCookieHostPrefix = "__Host-" + signInCookiePrefix
)

// signInCookieTTL is how long a started sign-in's cookie lives: as long as
// the sign-in waits for its callback.
const signInCookieTTL = 600 // seconds

// Start is what SignIns.StartSignIn is given.
type Start struct {
	// Server names the server, User the user signing in.
	Server, User string
	// CallbackOrigin is the redirect URI's scheme://host: the redirect
	// URI is CallbackOrigin + "/oauth/callback/" + the server's name,
	// path-escaped (mcpauth.CallbackPath).
	CallbackOrigin string
	// Binding is the SHA-256 (hex) of the secret the starting browser
	// holds in its sign-in cookie.
	Binding string
}

// Callback is what came back to server's callback,
// /oauth/callback/<server>, for SignIns.FinishSignIn.
type Callback struct {
	// Server is the server the callback's path names.
	Server string
	// State, Code and Iss are the authorization server's answer (Iss ""
	// when it sent none).
	State, Code, Iss string
	// Binding is the SHA-256 (hex) of the sign-in secret the browser
	// brought in its cookie, "" for none.
	Binding string
}

// Check accepts the answer for the sign-in started for server with
// binding (what StartSignIn was given): the answer must have come back on
// that server's callback path (ErrWrongCallback: an authorization server
// mix-up) and from the browser that started it (ErrNotBound).
func (cb Callback) Check(server, binding string) error {
	if server != cb.Server {
		return ErrWrongCallback
	}
	if binding == "" || cb.Binding == "" || subtle.ConstantTimeCompare([]byte(binding), []byte(cb.Binding)) != 1 {
		return ErrNotBound
	}
	return nil
}

// signInCookieName is the name of the cookie of a sign-in to server: one
// per server, so that a new start supersedes the one before and the
// callback, which knows the server from its path, reads one cookie. host
// says whether it has the __Host- prefix.
func signInCookieName(server string, host bool) string {
	sum := sha256.Sum256([]byte(server))
	if host {
		return signInCookieHostPrefix + hex.EncodeToString(sum[:8])
	}
	return signInCookiePrefix + hex.EncodeToString(sum[:8])
}

// secureCookies reports whether the browser takes Secure (and so
// __Host-) cookies from the redirect URI redirect: https, or a loopback
// name over http.
func secureCookies(redirect string) bool {
	u, err := url.Parse(redirect)
	if err != nil {
		return false
	}
	return u.Scheme == "https" || (u.Scheme == "http" && browsersafety.IsLoopback(u.Hostname()))
}

// newSecret returns a sign-in secret, for a cookie, and its
// SHA-256 (hex), for StartSignIn.
func newSecret() (secret, binding string) {
	secret = rand.Text()
	return secret, hashHex(secret)
}

// cookie is the cookie that binds a sign-in to server, whose
// redirect URI is redirect, to the browser it is sent to.
func cookie(server, redirect, secret string) *http.Cookie {
	secure := secureCookies(redirect)
	return &http.Cookie{Name: signInCookieName(server, secure), Value: secret, Path: "/",
		MaxAge: signInCookieTTL, HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode}
}

// binding returns the SHA-256 (hex) of the secret of the cookie of
// a sign-in to server that the callback's browser brought ("" for none),
// and clears the cookie: a sign-in's secret is good for one callback.
func (s *routes) binding(c *gin.Context, server string) string {
	// The start chose the cookie's kind by its redirect URI, which is
	// this callback's URL: the same request gives the same kind.
	origin, err := s.callbackOrigin(c.Request)
	secure := err == nil && secureCookies(origin)
	name := signInCookieName(server, secure)
	got, err := c.Cookie(name)
	http.SetCookie(c.Writer, &http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode})
	if err != nil || got == "" {
		return ""
	}
	return hashHex(got)
}

// hashHex is the SHA-256 of s in hex.
func hashHex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
