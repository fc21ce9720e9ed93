package mcpauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// Browser takes a user to an authorization URL during a sign-in. The answer
// comes back to the redirect URI, not through Browser.
//
// Open returns once the user has been sent there (a browser window opened,
// the link printed, or the page fetched), not when the sign-in is done; ctx
// bounds it. Implementations must be safe for concurrent use.
type Browser interface {
	Open(ctx context.Context, authURL string) error
}

// FetchBrowser is a Browser that GETs the authorization URL itself and
// follows its redirects to the loopback redirect URI: for authorization
// servers that approve at once (test servers, the conformance suite).
type FetchBrowser struct {
	// Client makes the requests; nil means a client of its own that
	// follows up to 10 redirects.
	Client *http.Client
}

// Open fetches authURL and follows its redirects; a final answer that is
// not 2xx is an error.
func (b FetchBrowser) Open(ctx context.Context, authURL string) error {
	c := b.Client
	if c == nil {
		c = &http.Client{}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return fmt.Errorf("authorization url: %w", err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("fetch the authorization page: %w", unwrapURLError(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("the authorization page answered %s", resp.Status)
	}
	return nil
}

// PendingAuth is an authorization request on its way: what the answer is
// checked against and what the code is exchanged with. It holds secrets
// (the PKCE verifier, the client secret).
type PendingAuth struct {
	state    string
	verifier string
	cfg      *oauth2.Config
	target   *authTarget
	scopes   []string
	clientID string
	secret   string
	method   string
}

// State is the OAuth state of p: the key a web sign-in is kept under
// until its callback.
func (p *PendingAuth) State() string { return p.state }

// Begin discovers the authorization server, settles the client identity
// (a Client ID Metadata Document when both sides support it, else the
// pre-registered client, else dynamic registration) and returns the
// authorization URL (code flow, PKCE S256, state, resource). A server
// whose grant needs no user has no sign-in to begin.
func (a *Authorizer) Begin(ctx context.Context, ch Challenge, scopes []string, redirect string) (*PendingAuth, string, error) {
	if a.cfg.OAuth.Unattended() {
		return nil, "", fmt.Errorf("server %q gets its token with oauth.grant %s, without a user: there is no sign-in to start", a.key.Server, a.cfg.OAuth.EffectiveGrant())
	}
	t, err := discover(ctx, a.client, a.cfg.URL, ch)
	if err != nil {
		return nil, "", err
	}
	as := t.as
	if !as.supportsS256() {
		return nil, "", fmt.Errorf("authorization server %s does not offer PKCE with S256 (code_challenge_methods_supported %q); refusing to sign in", as.Issuer, as.CodeChallengeMethodsSupported)
	}
	if as.AuthorizationEndpoint == "" {
		return nil, "", fmt.Errorf("authorization server %s has no authorization_endpoint", as.Issuer)
	}
	p := &PendingAuth{target: t, state: randomString(), verifier: oauth2.GenerateVerifier()}
	var o mcpconfig.OAuthConfig
	if a.cfg.OAuth != nil {
		o = *a.cfg.OAuth
	}
	cimd := isCIMDURL(o.ClientID)
	switch {
	case cimd && as.ClientIDMetadataDocumentSupported:
		p.clientID, p.method = o.ClientID, mcpconfig.AuthNone
	case o.ClientID != "" && !cimd:
		p.clientID, p.secret = o.ClientID, o.ClientSecret
		p.method = o.ClientAuth
		if p.method == "" {
			p.method = pickAuthMethod(as.TokenEndpointAuthMethodsSupported, o.ClientSecret != "", false)
		}
	case as.RegistrationEndpoint != "":
		p.clientID, p.secret, p.method, err = a.register(ctx, as, redirect)
		if err != nil {
			return nil, "", err
		}
	default:
		return nil, "", fmt.Errorf("authorization server %s offers no dynamic client registration; set oauth.client_id in mcp.json", as.Issuer)
	}
	if scopes == nil {
		scopes = a.scopes(ch, t)
	}
	p.scopes = scopes
	p.cfg = a.oauth2Config(p.clientID, p.secret, p.method, as.TokenEndpoint, as.AuthorizationEndpoint, redirect, scopes)
	authURL := p.cfg.AuthCodeURL(p.state, oauth2.S256ChallengeOption(p.verifier), oauth2.SetAuthURLParam("resource", t.resource))
	return p, authURL, nil
}

// Finish checks the authorization answer against p and exchanges the code
// (with the PKCE verifier and the resource) for a token, which it stores.
func (a *Authorizer) Finish(ctx context.Context, p *PendingAuth, code, state, iss string) (*Token, error) {
	if state == "" || !equalSecret(state, p.state) {
		return nil, errors.New("state mismatch: the authorization answer is not for this sign-in")
	}
	as := p.target.as
	if err := p.checkIss(iss); err != nil {
		return nil, err
	}
	if code == "" {
		return nil, errors.New("the authorization answer has no code")
	}
	octx, key, err := a.bindCtx(a.oauthCtx(ctx), p.target.dpop, nil)
	if err != nil {
		return nil, err
	}
	t, err := p.cfg.Exchange(octx, code, oauth2.VerifierOption(p.verifier),
		oauth2.SetAuthURLParam("resource", p.target.resource))
	if err != nil {
		return nil, fmt.Errorf("exchange the code at %s: %w", as.TokenEndpoint, tokenError(err))
	}
	tok := newToken(t, p.scopes, p.target)
	tok.ClientID, tok.ClientSecret, tok.AuthMethod = p.clientID, p.secret, p.method
	if err := bound(tok, key, p.target.dpopRequired, as.Issuer); err != nil {
		return nil, err
	}
	if err := a.save(ctx, tok); err != nil {
		return nil, err
	}
	a.logger.Info("signed in", "user", a.key.User, "token", tok)
	return tok, nil
}

// checkIss checks the iss of an answer to p against the issuer recorded
// from the authorization server's metadata (RFC 9207, checkIss).
func (p *PendingAuth) checkIss(iss string) error {
	as := p.target.as
	return checkIss(as.Issuer, as.AuthorizationResponseIssParameter, iss)
}

// isCIMDURL reports whether id is an https URL with a path: a Client ID
// Metadata Document.
func isCIMDURL(id string) bool {
	u, err := url.Parse(id)
	return err == nil && u.Scheme == "https" && u.Host != "" && strings.Trim(u.Path, "/") != ""
}

// register registers the client dynamically (RFC 7591) with redirect as
// its redirect URI, asking for the refresh_token grant too.
func (a *Authorizer) register(ctx context.Context, as *authServerMeta, redirect string) (id, secret, method string, err error) {
	want := mcpconfig.AuthNone
	if !slices.Contains(as.TokenEndpointAuthMethodsSupported, mcpconfig.AuthNone) && len(as.TokenEndpointAuthMethodsSupported) > 0 {
		want = pickAuthMethod(as.TokenEndpointAuthMethodsSupported, true, false)
	}
	body, _ := json.Marshal(map[string]any{
		"client_name":                "Elysia",
		"redirect_uris":              []string{redirect},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": want,
		"application_type":           "native",
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, as.RegistrationEndpoint, bytes.NewReader(body))
	if err != nil {
		return "", "", "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return "", "", "", fmt.Errorf("register a client at %s: %w", as.RegistrationEndpoint, unwrapURLError(err))
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, metadataLimit))
	var got struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		Method       string `json:"token_endpoint_auth_method"`
		Error        string `json:"error"`
	}
	jerr := json.Unmarshal(raw, &got)
	switch {
	case resp.StatusCode/100 != 2 && got.Error != "":
		return "", "", "", fmt.Errorf("register a client at %s: %s: %s", as.RegistrationEndpoint, resp.Status, got.Error)
	case resp.StatusCode/100 != 2:
		return "", "", "", fmt.Errorf("register a client at %s: %s", as.RegistrationEndpoint, resp.Status)
	case jerr != nil || got.ClientID == "":
		return "", "", "", fmt.Errorf("register a client at %s: the answer (%s) has no client_id", as.RegistrationEndpoint, contentType(resp))
	}
	method = got.Method
	if method == "" {
		method = want
		if got.ClientSecret == "" {
			method = mcpconfig.AuthNone
		}
	}
	return got.ClientID, got.ClientSecret, method, nil
}

// callbackResult is what arrived at the redirect URI.
type callbackResult struct {
	code, state, iss string
	err              error
}

// CallbackPath is the path of server's sign-in callback, on the service
// (web) and on the loopback listener of a terminal sign-in alike: one
// redirect URI per server, so that an authorization server's answer that
// comes back on one server's path is never taken for another's sign-in
// (mix-up, RFC 9700 4.4).
func CallbackPath(server string) string { return "/oauth/callback/" + url.PathEscape(server) }

// SignInLoopback signs the user in with a loopback redirect (RFC 8252): it
// listens on the configured redirect_uri (else 127.0.0.1 on a free port,
// at CallbackPath), sends the user to the authorization URL through
// browser, and exchanges the code that comes back. ctx bounds the whole
// sign-in. A server whose grant needs no user gets its token by that grant
// instead, without a browser.
func (a *Authorizer) SignInLoopback(ctx context.Context, ch Challenge, scopes []string, browser Browser) (*Token, error) {
	if a.cfg.OAuth.Unattended() {
		return a.Unattended(ctx, ch, scopes)
	}
	addr, path := "127.0.0.1:0", CallbackPath(a.key.Server)
	if a.cfg.OAuth != nil && a.cfg.OAuth.RedirectURI != "" {
		u, err := url.Parse(a.cfg.OAuth.RedirectURI)
		if err != nil || u.Scheme != "http" || !isLoopback(u.Hostname()) {
			return nil, fmt.Errorf("oauth.redirect_uri %q: signing in from here needs an http://127.0.0.1 or http://localhost redirect", a.cfg.OAuth.RedirectURI)
		}
		addr, path = u.Host, u.Path
		if u.Port() == "" {
			addr = net.JoinHostPort(u.Hostname(), "80")
		}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for the sign-in redirect: %w", err)
	}
	redirect := "http://" + ln.Addr().String() + path
	if a.cfg.OAuth != nil && a.cfg.OAuth.RedirectURI != "" {
		redirect = a.cfg.OAuth.RedirectURI
	}

	results := make(chan callbackResult, 1)
	var pending atomic.Pointer[PendingAuth] // set before the browser goes
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.EscapedPath() != path && r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		res := callbackResult{code: q.Get("code"), state: q.Get("state"), iss: q.Get("iss")}
		// The issuer first, errors included: an answer from another
		// issuer is neither acted on nor shown (RFC 9207 §2.4).
		p := pending.Load()
		if p == nil { // not an answer: the sign-in has not begun
			http.Error(w, "no sign-in to "+a.key.Server+" is waiting for an answer", http.StatusBadRequest)
			return
		}
		var msg string
		switch issErr := p.checkIss(res.iss); {
		case issErr != nil:
			res.err = issErr
			msg = "This answer did not come from the authorization server of " + a.key.Server + "; the sign-in is void."
		case q.Get("error") != "":
			res.err = fmt.Errorf("the authorization server refused: %s", q.Get("error"))
			msg = "Sign-in to " + a.key.Server + " failed: " + q.Get("error")
		default:
			msg = "Signed in to " + a.key.Server + ". You may close this window."
		}
		// Handed on before the page goes, so that the sign-in has it by
		// the time the browser sees the page.
		select {
		case results <- res:
		default: // only the first answer counts
		}
		if res.err != nil {
			w.WriteHeader(http.StatusBadRequest)
		}
		_, _ = fmt.Fprintf(w, "<!doctype html><title>Elysia</title><p>%s</p>\n", html.EscapeString(msg))
	})}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	defer func() {
		_ = srv.Close()
		<-served
	}()

	p, authURL, err := a.Begin(ctx, ch, scopes, redirect)
	if err != nil {
		return nil, err
	}
	pending.Store(p)
	openErr := browser.Open(ctx, authURL)
	var res callbackResult
	select {
	case res = <-results:
		// An answer came, which says more than a browser that saw the
		// refusal page (FetchBrowser) does.
	default:
		if openErr != nil {
			return nil, openErr
		}
		select {
		case res = <-results:
		case <-ctx.Done():
			return nil, fmt.Errorf("no sign-in answer at %s: %w", redirect, ctx.Err())
		}
	}
	if res.err != nil {
		return nil, res.err
	}
	return a.Finish(ctx, p, res.code, res.state, res.iss)
}
