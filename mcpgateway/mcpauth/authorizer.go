package mcpauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// refreshMargin refreshes a token this long before it expires.
const refreshMargin = 30 * time.Second

// Authorizer holds the OAuth state of one (server, user): the token in
// use, refreshing it, and signing in (discovery, client identity,
// authorization code with PKCE, or client credentials). Every session of
// that server and user shares it. It is safe for concurrent use.
type Authorizer struct {
	key     TokenKey
	cfg     mcpconfig.ServerConfig
	server  *url.URL
	store   TokenStore
	browser Browser // nil: no sign-in from inside a call
	logger  *slog.Logger
	// client makes the OAuth requests (metadata, registration, token,
	// revocation), each bounded by connect_timeout and following no
	// redirect (newOAuthClient).
	client *http.Client

	// flow serialises refreshes and sign-ins: concurrent calls that all
	// got a 401 refresh once. It is held across OAuth requests and a
	// user's time in the browser, so it is a channel of one rather than a
	// mutex: a waiter whose ctx ends gives up (LockFlow).
	flow chan struct{}

	// Userless is set on the shared session of a server that may need
	// sign-in: it has no user, so it sends no token and answers a 401
	// with ErrSignInRequired (the gateway then goes per user). It has no
	// effect when the grant needs no user (OAuthConfig.Unattended).
	Userless bool

	// nonces are the DPoP nonces the server and its authorization
	// servers gave (RFC 9449 §8, §9).
	nonces dpopNonces

	// mu guards tok, loaded, the parsed DPoP key of dpopKeyText and the
	// last refusal of a jwt-bearer credential (jwtbearer.go).
	mu          sync.Mutex
	tok         *Token
	loaded      bool
	dpopKey     *dpopKey
	dpopKeyText string
	refusedKey  [sha256.Size]byte
	refusedErr  error
}

func NewAuthorizer(cfg mcpconfig.ServerConfig, user string, store TokenStore, browser Browser, logger *slog.Logger) *Authorizer {
	u, _ := url.Parse(cfg.URL) // Validate checked it
	connect, _ := cfg.Timeouts()
	base := http.DefaultTransport.(*http.Transport).Clone()
	return &Authorizer{
		key:     TokenKey{Server: cfg.Name, User: user},
		cfg:     cfg,
		server:  u,
		store:   store,
		browser: browser,
		logger:  logger,
		client:  newOAuthClient(connect, &dpopOnToken{base: &resourceOnRefresh{base: base}}),
		flow:    make(chan struct{}, 1),
	}
}

// CloseIdleConnections closes the idle connections of the client that
// makes a's OAuth requests, which has a pool of its own.
func (a *Authorizer) CloseIdleConnections() { a.client.CloseIdleConnections() }

// LockFlow takes flow, or returns ctx's error if ctx ends first. The
// caller calls UnlockFlow once done.
func (a *Authorizer) LockFlow(ctx context.Context) error {
	select {
	case a.flow <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (a *Authorizer) UnlockFlow() { <-a.flow }

// oauthCtx is ctx carrying the authorizer's HTTP client for x/oauth2.
func (a *Authorizer) oauthCtx(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, a.client)
}

// current returns the token to send, loading it from the store the first
// time and refreshing it when it is about to expire; nil when there is
// none. A stored token for another resource (mcp.json now points the
// server elsewhere) is never used.
func (a *Authorizer) current(ctx context.Context) (*Token, error) {
	if a.userless() {
		return nil, nil //nolint:nilnil // no token is a valid answer: the request goes without one
	}
	a.mu.Lock()
	tok, loaded := a.tok, a.loaded
	a.mu.Unlock()
	if !loaded {
		var err error
		tok, err = a.load(ctx)
		if err != nil {
			return nil, err
		}
	}
	if tok != nil && tok.RefreshToken != "" && !tok.Expiry.IsZero() && time.Until(tok.Expiry) < refreshMargin {
		return a.refreshed(ctx, tok)
	}
	return tok, nil
}

// load reads the stored token.
func (a *Authorizer) load(ctx context.Context) (*Token, error) {
	tok, err := a.store.Get(ctx, a.key)
	switch {
	case errors.Is(err, ErrNoToken):
		tok = nil
	case err != nil:
		return nil, fmt.Errorf("read the token of user %q: %w", a.key.User, err)
	case !resourceMatches(tok.Resource, a.server):
		a.logger.Warn("stored token is for another url; not sending it", "user", a.key.User, "token", tok)
		tok = nil
	}
	a.mu.Lock()
	a.tok, a.loaded = tok, true
	a.mu.Unlock()
	return tok, nil
}

// refreshed refreshes used unless another call already replaced it.
func (a *Authorizer) refreshed(ctx context.Context, used *Token) (*Token, error) {
	if err := a.LockFlow(ctx); err != nil {
		return nil, err
	}
	defer a.UnlockFlow()
	if tok := a.peek(); !sameToken(tok, used) {
		return tok, nil
	}
	return a.refresh(ctx, used)
}

func (a *Authorizer) peek() *Token {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.tok
}

func sameToken(a, b *Token) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.AccessToken == b.AccessToken
}

// unauthorized handles a 401 to a request sent with used (nil: none):
// another call's newer token, else a refresh, else a new grant: client
// credentials, or a sign-in through the browser when there is one. flow
// is held, so concurrent 401s lead to one of these.
func (a *Authorizer) unauthorized(ctx context.Context, ch Challenge, used *Token) (*Token, error) {
	if a.userless() {
		return nil, &SignInRequiredError{Server: a.key.Server, Scopes: ch.scopes(), Reason: "the server asks every user to sign in"}
	}
	if err := a.LockFlow(ctx); err != nil {
		return nil, err
	}
	defer a.UnlockFlow()
	if tok := a.peek(); tok != nil && !sameToken(tok, used) {
		return tok, nil
	}
	// Another replica may have refreshed or signed in.
	if tok, err := a.load(ctx); err == nil && tok != nil && !sameToken(tok, used) {
		return tok, nil
	}
	why := "no token"
	if used != nil {
		why = "the server refused the token, which cannot be refreshed"
	}
	// A token from an authorization server the resource no longer names
	// is not refreshed there: the user signs in at the new one.
	if moved, err := a.migrated(ctx, ch, used); err != nil {
		return nil, err
	} else if moved != "" {
		return a.grant(ctx, ch, nil, moved)
	}
	if used != nil && used.RefreshToken != "" {
		tok, err := a.refresh(ctx, used)
		if err == nil {
			return tok, nil
		}
		sr, ok := errors.AsType[*SignInRequiredError](err)
		if !ok {
			return nil, err
		}
		why = sr.Reason // the user is told why they must sign in again
	}
	return a.grant(ctx, ch, nil, why)
}

// insufficientScope handles a 403 insufficient_scope (step-up): a new
// grant asking for the granted scopes plus those the challenge names. A
// challenge for scopes the token already has is not retried: the server
// will refuse again whatever is asked (the retry limit of the spec).
func (a *Authorizer) insufficientScope(ctx context.Context, ch Challenge, used *Token) (*Token, error) {
	if err := a.LockFlow(ctx); err != nil {
		return nil, err
	}
	defer a.UnlockFlow()
	if tok := a.peek(); tok != nil && !sameToken(tok, used) {
		return tok, nil
	}
	var granted []string
	if used != nil {
		granted = used.Scopes
	}
	want := ch.scopes()
	if len(want) == 0 || containsAll(granted, want) {
		return nil, fmt.Errorf("server refuses the token for insufficient scope (%s) although it was granted %q; not signing in again",
			strings.Join(want, " "), strings.Join(granted, " "))
	}
	return a.grant(ctx, ch, unionScopes(granted, want), "the server asks for more scope: "+strings.Join(want, " "))
}

// userless reports whether a sends no token for want of a user.
func (a *Authorizer) userless() bool { return a.Userless && !a.cfg.OAuth.Unattended() }

// grant obtains a new token: by the configured grant when it needs no
// user, else a sign-in through the browser; without one, the user must
// sign in.
func (a *Authorizer) grant(ctx context.Context, ch Challenge, scopes []string, why string) (*Token, error) {
	if a.cfg.OAuth.Unattended() {
		return a.Unattended(ctx, ch, scopes)
	}
	if a.browser == nil {
		if len(scopes) == 0 {
			scopes = ch.scopes()
		}
		return nil, &SignInRequiredError{Server: a.key.Server, User: a.key.User, Scopes: scopes, Reason: why}
	}
	return a.SignInLoopback(ctx, ch, scopes, a.browser)
}

// Unattended obtains a token by the configured grant that needs no user:
// client credentials, jwt_bearer or id_jag. The caller holds the flow
// (LockFlow).
func (a *Authorizer) Unattended(ctx context.Context, ch Challenge, scopes []string) (*Token, error) {
	switch g := a.cfg.OAuth.EffectiveGrant(); g {
	case mcpconfig.GrantClientCredentials:
		return a.ClientCredentials(ctx, ch, scopes)
	case mcpconfig.GrantJWTBearer:
		return a.JWTBearer(ctx, ch, scopes)
	case mcpconfig.GrantIDJAG:
		return a.IDJAG(ctx, ch, scopes)
	default:
		return nil, fmt.Errorf("server %q signs users in (oauth.grant %s): no token without a user", a.key.Server, g)
	}
}

// refresh exchanges used's refresh token. A refused refresh token
// (invalid_grant: revoked or expired) is forgotten, and the user must sign
// in again.
func (a *Authorizer) refresh(ctx context.Context, used *Token) (*Token, error) {
	cfg := a.oauth2Config(used.ClientID, used.ClientSecret, used.AuthMethod, used.TokenURL, "", "", nil)
	old := &oauth2.Token{RefreshToken: used.RefreshToken, Expiry: time.Unix(1, 0)}
	// A DPoP-bound refresh token is refreshed with a proof of its key.
	var key *dpopKey
	if used.DPoPKey != "" {
		var err error
		if key, err = a.keyOf(used); err != nil {
			return nil, err
		}
	}
	octx, _, err := a.bindCtx(a.oauthCtx(ctx), key != nil, key)
	if err != nil {
		return nil, err
	}
	t, err := cfg.TokenSource(withResource(octx, used.Resource), old).Token()
	if err != nil {
		if re, ok := errors.AsType[*oauth2.RetrieveError](err); ok && (re.ErrorCode == "invalid_grant" || re.ErrorCode == "invalid_token") {
			a.forget(ctx)
			return nil, &SignInRequiredError{Server: a.key.Server, User: a.key.User, Reason: "the authorization server refused the refresh token"}
		}
		return nil, fmt.Errorf("refresh the token of user %q: %w", a.key.User, tokenError(err))
	}
	tok := used.clone()
	tok.AccessToken, tok.TokenType, tok.Expiry = t.AccessToken, t.TokenType, t.Expiry
	if t.RefreshToken != "" {
		tok.RefreshToken = t.RefreshToken
	}
	if s, ok := t.Extra("scope").(string); ok && s != "" {
		tok.Scopes = strings.Fields(s)
	}
	return tok, a.save(ctx, tok)
}

// save stores tok and makes it the one in use. Nothing is kept when the
// store refuses it.
func (a *Authorizer) save(ctx context.Context, tok *Token) error {
	if err := a.store.Put(ctx, a.key, tok); err != nil {
		return fmt.Errorf("store the token of user %q: %w", a.key.User, err)
	}
	a.mu.Lock()
	a.tok, a.loaded = tok, true
	a.mu.Unlock()
	return nil
}

// forget drops the token, in memory and in the store.
func (a *Authorizer) forget(ctx context.Context) {
	a.mu.Lock()
	a.tok, a.loaded = nil, true
	a.mu.Unlock()
	if err := a.store.Delete(ctx, a.key); err != nil {
		a.logger.Warn("could not delete a refused token", "user", a.key.User, "err", err)
	}
}

// ClientCredentials gets a token for the configured client itself (no
// user), authenticating with its secret or a signed JWT (private_key_jwt).
func (a *Authorizer) ClientCredentials(ctx context.Context, ch Challenge, scopes []string) (*Token, error) {
	t, err := discover(ctx, a.client, a.cfg.URL, ch)
	if err != nil {
		return nil, err
	}
	if len(scopes) == 0 {
		scopes = a.scopes(ch, t)
	}
	return a.tokenRequest(ctx, t, scopes, nil, "client credentials grant")
}

// tokenRequest asks t's token endpoint for a token by the grant whose
// parameters are grant (nil: client credentials), authenticating as the
// configured client (its secret, a private_key_jwt assertion, or only its
// id), with the resource and scopes, bound to a DPoP key when the resource
// wants one; what names the grant in errors and logs. The token is saved.
// Such tokens are not refreshed: the grant is repeated.
func (a *Authorizer) tokenRequest(ctx context.Context, t *authTarget, scopes []string, grant url.Values, what string) (*Token, error) {
	o := a.cfg.OAuth
	method := o.ClientAuth
	if method == "" {
		method = pickAuthMethod(t.as.TokenEndpointAuthMethodsSupported, o.ClientSecret != "", o.PrivateKey != "")
	}
	params := url.Values{"resource": {t.resource}}
	for k, v := range grant {
		params[k] = v // grant_type included: clientcredentials lets it be replaced
	}
	cc := clientcredentials.Config{ClientID: o.ClientID, TokenURL: t.as.TokenEndpoint, Scopes: scopes, EndpointParams: params}
	switch method {
	case mcpconfig.AuthPrivateKeyJWT:
		if _, alg, err := mcpconfig.ParseSigningKey(o.PrivateKey); err != nil {
			return nil, fmt.Errorf("oauth.private_key: %w", err)
		} else if algs := t.as.TokenEndpointAuthSigningAlgs; len(algs) > 0 && !slices.Contains(algs, alg) {
			return nil, fmt.Errorf("the authorization server takes client assertions signed with %s, and oauth.private_key signs %s", strings.Join(algs, ", "), alg)
		}
		assertion, err := clientAssertion(o.PrivateKey, o.ClientID, t.as.Issuer, time.Now())
		if err != nil {
			return nil, err
		}
		params.Set("client_assertion_type", clientAssertionType)
		params.Set("client_assertion", assertion)
		cc.AuthStyle = oauth2.AuthStyleInParams
	case mcpconfig.AuthClientSecretPost, mcpconfig.AuthNone:
		cc.AuthStyle = oauth2.AuthStyleInParams
		if method == mcpconfig.AuthClientSecretPost {
			cc.ClientSecret = o.ClientSecret
		}
	default:
		cc.ClientSecret, cc.AuthStyle = o.ClientSecret, oauth2.AuthStyleInHeader
	}
	octx, key, err := a.bindCtx(a.oauthCtx(ctx), t.dpop, nil)
	if err != nil {
		return nil, err
	}
	got, err := cc.Token(octx)
	if err != nil {
		return nil, fmt.Errorf("%s at %s: %w", what, t.as.TokenEndpoint, tokenError(err))
	}
	tok := newToken(got, scopes, t)
	tok.RefreshToken = ""
	// The client is named so that a move of the authorization server
	// is seen to leave it behind (migrated).
	tok.ClientID, tok.AuthMethod = o.ClientID, method
	if err := bound(tok, key, t.dpopRequired, t.as.Issuer); err != nil {
		return nil, err
	}
	a.logger.Info("obtained a token", "grant", what, "token", tok)
	return tok, a.save(ctx, tok)
}

// newToken turns x/oauth2's token into ours.
func newToken(t *oauth2.Token, asked []string, target *authTarget) *Token {
	tok := &Token{
		AccessToken: t.AccessToken, TokenType: t.TokenType, RefreshToken: t.RefreshToken, Expiry: t.Expiry,
		Scopes: slices.Clone(asked), Resource: target.resource, Issuer: target.as.Issuer, TokenURL: target.as.TokenEndpoint,
	}
	if s, ok := t.Extra("scope").(string); ok && s != "" {
		tok.Scopes = strings.Fields(s)
	}
	return tok
}

// scopes chooses what to ask for (the MCP spec's scope selection): the
// configured scopes, else the challenge's, else the resource's
// scopes_supported, else none; plus offline_access when the authorization
// server offers it, so that the token can be refreshed.
func (a *Authorizer) scopes(ch Challenge, t *authTarget) []string {
	var s []string
	switch {
	case a.cfg.OAuth != nil && len(a.cfg.OAuth.Scopes) > 0:
		s = slices.Clone(a.cfg.OAuth.Scopes)
	case len(ch.scopes()) > 0:
		s = ch.scopes()
	default:
		s = slices.Clone(t.scopesSupported)
	}
	if a.cfg.OAuth.EffectiveGrant() == mcpconfig.GrantAuthorizationCode && slices.Contains(t.as.ScopesSupported, "offline_access") && !slices.Contains(s, "offline_access") {
		s = append(s, "offline_access")
	}
	return s
}

// pickAuthMethod chooses a token endpoint auth method among those the
// authorization server offers (RFC 8414's default is client_secret_basic).
func pickAuthMethod(offered []string, haveSecret, haveKey bool) string {
	if len(offered) == 0 {
		offered = []string{mcpconfig.AuthClientSecretBasic}
	}
	var prefs []string
	if haveKey {
		prefs = append(prefs, mcpconfig.AuthPrivateKeyJWT)
	}
	if haveSecret {
		prefs = append(prefs, mcpconfig.AuthClientSecretBasic, mcpconfig.AuthClientSecretPost)
	}
	prefs = append(prefs, mcpconfig.AuthNone)
	for _, p := range prefs {
		if slices.Contains(offered, p) {
			return p
		}
	}
	if haveSecret {
		return mcpconfig.AuthClientSecretBasic
	}
	return mcpconfig.AuthNone
}

// oauth2Config is the x/oauth2 view of a client at an authorization server.
func (a *Authorizer) oauth2Config(clientID, secret, method, tokenURL, authURL, redirect string, scopes []string) *oauth2.Config {
	style := oauth2.AuthStyleInHeader
	switch method {
	case mcpconfig.AuthClientSecretPost, mcpconfig.AuthNone:
		style = oauth2.AuthStyleInParams
	}
	if method == mcpconfig.AuthNone {
		secret = ""
	}
	return &oauth2.Config{
		ClientID: clientID, ClientSecret: secret, RedirectURL: redirect, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: authURL, TokenURL: tokenURL, AuthStyle: style},
	}
}

// tokenError turns x/oauth2's errors into ones that say what the token
// endpoint answered without quoting its body (an HTML page, or worse).
func tokenError(err error) error {
	re, ok := errors.AsType[*oauth2.RetrieveError](err)
	if !ok {
		return unwrapURLError(err)
	}
	status := "no response"
	if re.Response != nil {
		status = re.Response.Status
	}
	if re.ErrorCode != "" {
		msg := fmt.Sprintf("token endpoint answered %s: %s", status, re.ErrorCode)
		if d := re.ErrorDescription; d != "" && len(d) < 200 {
			msg += ": " + d
		}
		return &refusal{code: re.ErrorCode, msg: msg}
	}
	ct := "no content type"
	if re.Response != nil && re.Response.Header.Get("Content-Type") != "" {
		ct = re.Response.Header.Get("Content-Type")
	}
	return fmt.Errorf("token endpoint answered %s (%s), not a token", status, ct)
}

// refusal is a token endpoint's error answer (RFC 6749 §5.2): the
// authorization server refused the grant, which asking again the same way
// will not change.
type refusal struct{ code, msg string }

func (r *refusal) Error() string { return r.msg }

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

func unionScopes(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// randomString returns n random bytes as URL-safe text.
func randomString() string { return rand.Text() }

// equalSecret compares two secrets in constant time.
func equalSecret(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// resourceKey carries the resource a refresh is for, through x/oauth2, to
// resourceOnRefresh.
type resourceKey struct{}

func withResource(ctx context.Context, resource string) context.Context {
	return context.WithValue(ctx, resourceKey{}, resource)
}

// resourceOnRefresh adds the RFC 8707 resource parameter to refresh-token
// requests, which x/oauth2 sends without a way to add parameters.
type resourceOnRefresh struct{ base http.RoundTripper }

func (t *resourceOnRefresh) RoundTrip(r *http.Request) (*http.Response, error) {
	res, _ := r.Context().Value(resourceKey{}).(string)
	if res == "" || r.Method != http.MethodPost || r.GetBody == nil ||
		!strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return t.base.RoundTrip(r)
	}
	body, err := r.GetBody()
	if err != nil {
		return t.base.RoundTrip(r)
	}
	raw, err := io.ReadAll(io.LimitReader(body, 1<<20))
	_ = body.Close()
	form, perr := url.ParseQuery(string(raw))
	if err != nil || perr != nil || form.Get("grant_type") != "refresh_token" || form.Has("resource") {
		return t.base.RoundTrip(r)
	}
	form.Set("resource", res)
	enc := form.Encode()
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(strings.NewReader(enc))
	r2.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(enc)), nil }
	r2.ContentLength = int64(len(enc))
	return t.base.RoundTrip(r2)
}

// SetTokenExpiry sets the expiry of the token a holds in memory (the
// stored copy is left alone), so that the next request that finds it
// expired refreshes it first. Tests use it to expire a token without
// waiting; it does nothing when a holds no token.
func (a *Authorizer) SetTokenExpiry(expiry time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.tok != nil {
		a.tok = a.tok.clone()
		a.tok.Expiry = expiry
	}
}

// HasToken reports whether the user has a token for this server.
func (a *Authorizer) HasToken(ctx context.Context) bool {
	tok, err := a.current(ctx)
	return err == nil && tok != nil
}
