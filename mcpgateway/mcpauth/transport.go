package mcpauth

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// maxAuthRetries bounds how often one request is sent again after a new
// token (a 401 answered by a refresh or sign-in, a 403 insufficient_scope
// by a step-up), so that a server that keeps refusing cannot loop.
const maxAuthRetries = 2

// authRoundTripper is the outer layer of a remote session's http.Client:
// it puts the configured headers and the user's token on every request of
// the session (mcp-go's closing DELETE included, which carries neither on
// its own), a Bearer token as such and a DPoP-bound one with a fresh proof
// of its key (RFC 9449 §7), answers a 401 by a refresh or a new grant, a
// 401 use_dpop_nonce by the nonce the server gave, and a 403
// insufficient_scope by a step-up, then sends the request again. It
// refuses a request to another origin than the server's: the client
// follows no redirect there (ServerRedirects), and nothing else of the
// session may take the credentials elsewhere.
type authRoundTripper struct {
	base    http.RoundTripper
	name    string   // the server's, for errors
	server  *url.URL // the server's URL: credentials go to its origin only
	headers map[string]string
	auth    *Authorizer // nil: the server needs no OAuth (static headers)
}

// NewRoundTripper returns the http.RoundTripper of a session of the remote
// server cfg over base: cfg's headers, and auth's token when auth is not
// nil, go to cfg.URL's origin only.
func NewRoundTripper(base http.RoundTripper, cfg mcpconfig.ServerConfig, auth *Authorizer) http.RoundTripper {
	server, _ := url.Parse(cfg.URL) // Validate checked it
	return &authRoundTripper{base: base, name: cfg.Name, server: server, headers: cfg.Headers, auth: auth}
}

func (t *authRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	if !sameOrigin(r.URL, t.server) {
		closeBody(r)
		return nil, fmt.Errorf("server %q: a request to another origin (%q); its token and headers go to its own origin only", t.name, origin(r.URL))
	}
	var tok *Token
	if t.auth != nil {
		var err error
		if tok, err = t.auth.current(ctx); err != nil {
			closeBody(r)
			return nil, err
		}
	}
	var authRetries, nonceRetries int
	for first := true; ; first = false {
		req := r.Clone(ctx)
		if !first {
			body, err := r.GetBody()
			if err != nil {
				return nil, err
			}
			req.Body = body
		}
		for k, v := range t.headers {
			if req.Header.Get(k) == "" {
				req.Header.Set(k, v)
			}
		}
		if tok != nil {
			if err := t.auth.authorize(req, tok); err != nil {
				closeBody(req)
				return nil, err
			}
		}
		resp, err := t.base.RoundTrip(req)
		if err != nil || t.auth == nil || (r.Body != nil && r.GetBody == nil) {
			return resp, err
		}
		fresh := ""
		if tok != nil && tok.dpop() {
			fresh = t.auth.nonces.note(req.URL, resp)
		}
		ch := parseChallenge(resp.Header.Values("WWW-Authenticate"))
		switch {
		case resp.StatusCode == http.StatusUnauthorized && fresh != "" && ch.dpopNonce():
			// RFC 9449 §9: the same token again, with the server's nonce.
			drain(resp)
			if nonceRetries >= maxNonceRetries {
				return nil, fmt.Errorf("server %q asks for a new DPoP nonce again after %d retries (use_dpop_nonce); giving up", t.name, nonceRetries)
			}
			nonceRetries++
			continue
		case authRetries >= maxAuthRetries:
			return resp, nil
		case resp.StatusCode == http.StatusUnauthorized:
			drain(resp)
			tok, err = t.auth.unauthorized(ctx, ch, tok)
		case resp.StatusCode == http.StatusForbidden && ch["error"] == "insufficient_scope":
			drain(resp)
			tok, err = t.auth.insufficientScope(ctx, ch, tok)
		default:
			return resp, nil
		}
		if err != nil {
			return nil, err
		}
		authRetries++
	}
}

// CloseIdleConnections passes on to the base transport.
func (t *authRoundTripper) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// NeedsAuth reports whether a server may use OAuth: http and sse servers
// whose headers do not already carry an Authorization (a static token
// wins; a 401 then is the operator's to fix).
func NeedsAuth(cfg mcpconfig.ServerConfig) bool {
	if cfg.Transport == mcpconfig.TransportStdio {
		return false
	}
	for k := range cfg.Headers {
		if strings.EqualFold(k, "Authorization") {
			return false
		}
	}
	return true
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	_ = resp.Body.Close()
}

func closeBody(r *http.Request) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
}
