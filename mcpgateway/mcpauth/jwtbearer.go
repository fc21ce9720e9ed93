package mcpauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// The grants that present a JWT to the MCP server's authorization server
// as the RFC 7523 jwt-bearer grant, with no user and no browser:
//
//   - jwt_bearer, workload identity federation (SEP-1933): the JWT is the
//     workload's own, issued by its platform (a Kubernetes projected
//     service account token, a SPIFFE JWT-SVID, a cloud's identity token);
//   - id_jag, enterprise-managed authorization (the MCP extension): an ID
//     token from the enterprise IdP is exchanged at the IdP's token
//     endpoint (RFC 8693) for an Identity Assertion JWT Authorization
//     Grant, an ID-JAG, which is the JWT presented.
//
// The credential (the JWT, or the ID token) is read again for every token,
// so a platform's rotated file is picked up. A token endpoint's refusal of
// a credential is remembered: the same credential is not sent again for
// the same scopes, and no other grant is tried instead (the extensions ask
// clients to surface the error, not retry or fall back); a new credential
// is tried. Credentials are secrets: they are never in errors or logs.

// OAuth URNs of the grants (RFC 7523 §2.1, RFC 8693 §2.1, §3) and of the
// ID-JAG token type (draft-ietf-oauth-identity-assertion-authz-grant).
const (
	grantJWTBearer     = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeIDToken   = "urn:ietf:params:oauth:token-type:id_token"
	tokenTypeIDJAG     = "urn:ietf:params:oauth:token-type:id-jag"
)

// credentialLimit bounds a credential file; clockSkew is how long past
// its exp a JWT is still sent (the authorization server's clock decides).
const (
	credentialLimit = 64 << 10
	clockSkew       = 30 * time.Second
)

// credential returns the JWT of the oauth block's key (its value, else the
// contents of key_file) after checking it is a JWT that has not expired.
// Errors name the key and the file, never the contents.
func credential(val, file, key string, now time.Time) (string, error) {
	where := "oauth." + key
	if file != "" {
		where = fmt.Sprintf("oauth.%s_file %s", key, file)
		f, err := os.Open(file)
		if err != nil {
			return "", fmt.Errorf("oauth.%s_file: %w", key, err)
		}
		raw, err := io.ReadAll(io.LimitReader(f, credentialLimit+1))
		_ = f.Close()
		switch {
		case err != nil:
			return "", fmt.Errorf("read %s: %w", where, err)
		case len(raw) > credentialLimit:
			return "", fmt.Errorf("%s: larger than %d bytes, not a JWT", where, credentialLimit)
		}
		val = string(raw)
	}
	val = strings.TrimSpace(val)
	if val == "" {
		return "", fmt.Errorf("%s is empty", where)
	}
	exp, err := jwtExpiry(val)
	if err != nil {
		return "", fmt.Errorf("%s: %w", where, err)
	}
	if !exp.IsZero() && now.After(exp.Add(clockSkew)) {
		return "", fmt.Errorf("%s: the JWT expired at %s", where, exp.UTC().Format(time.RFC3339))
	}
	return val, nil
}

// jwtExpiry checks that s is a compact JWT (three base64url parts, a JSON
// header and claims) and returns its exp, zero when it has none. It does
// not verify the signature: that is the authorization server's to do.
func jwtExpiry(s string) (time.Time, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 || parts[2] == "" {
		return time.Time{}, errors.New("not a JWT (three dot-separated base64url parts, signed)")
	}
	var header struct {
		Alg string `json:"alg"`
	}
	var claims struct {
		Exp *json.Number `json:"exp"`
	}
	for i, dst := range []any{&header, &claims} {
		raw, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil || json.Unmarshal(raw, dst) != nil {
			return time.Time{}, fmt.Errorf("not a JWT (its %s is not base64url JSON)", [...]string{"header", "claims"}[i])
		}
	}
	if header.Alg == "" || strings.EqualFold(header.Alg, "none") {
		return time.Time{}, errors.New("not a signed JWT (no alg, or alg none)")
	}
	if claims.Exp == nil {
		return time.Time{}, nil
	}
	exp, err := claims.Exp.Float64()
	if err != nil {
		return time.Time{}, errors.New("its exp is not a number")
	}
	return time.Unix(int64(exp), 0), nil
}

// JWTBearer gets a token with the jwt_bearer grant: the configured JWT
// presented as the RFC 7523 authorization grant.
func (a *Authorizer) JWTBearer(ctx context.Context, ch Challenge, scopes []string) (*Token, error) {
	o := a.cfg.OAuth
	assertion, t, scopes, err := a.prepare(ctx, ch, scopes, o.Assertion, o.AssertionFile, "assertion")
	if err != nil {
		return nil, err
	}
	return a.presentJWT(ctx, t, scopes, assertion, assertion, "jwt-bearer grant")
}

// IDJAG gets a token by enterprise-managed authorization: the configured
// ID token is exchanged at the enterprise IdP for an ID-JAG naming the MCP
// server's authorization server and resource, which is then presented
// there as the jwt-bearer grant.
func (a *Authorizer) IDJAG(ctx context.Context, ch Challenge, scopes []string) (*Token, error) {
	o := a.cfg.OAuth
	idToken, t, scopes, err := a.prepare(ctx, ch, scopes, o.IDToken, o.IDTokenFile, "id_token")
	if err != nil {
		return nil, err
	}
	if err := a.refused(idToken, scopes); err != nil {
		return nil, err
	}
	jag, err := a.exchangeIDToken(ctx, t, scopes, idToken)
	if err != nil {
		return nil, a.noteRefusal(idToken, scopes, err, idToken)
	}
	return a.presentJWT(ctx, t, scopes, jag, idToken, "ID-JAG jwt-bearer grant")
}

// prepare reads the credential of key (credential), discovers the
// authorization server and settles the scopes to ask for.
func (a *Authorizer) prepare(ctx context.Context, ch Challenge, scopes []string, val, file, key string) (string, *authTarget, []string, error) {
	cred, err := credential(val, file, key, time.Now())
	if err != nil {
		return "", nil, nil, err
	}
	t, err := discover(ctx, a.client, a.cfg.URL, ch)
	if err != nil {
		return "", nil, nil, err
	}
	if len(scopes) == 0 {
		scopes = a.scopes(ch, t)
	}
	return cred, t, scopes, nil
}

// presentJWT sends the jwt-bearer grant of assertion to t's token
// endpoint, unless the authorization server refused cred (the credential
// the assertion came from) for these scopes before.
func (a *Authorizer) presentJWT(ctx context.Context, t *authTarget, scopes []string, assertion, cred, what string) (*Token, error) {
	if err := a.refused(cred, scopes); err != nil {
		return nil, err
	}
	tok, err := a.tokenRequest(ctx, t, scopes, url.Values{"grant_type": {grantJWTBearer}, "assertion": {assertion}}, what)
	if err != nil {
		return nil, a.noteRefusal(cred, scopes, err, assertion, cred)
	}
	return tok, nil
}

// exchangeIDToken is the token exchange of RFC 8693 at the enterprise IdP
// (its configured token endpoint, else the one its metadata names): the ID
// token for an ID-JAG whose audience is t's authorization server and
// whose resource is t's. The IdP client authenticates with its secret
// when it has one (as the IdP's metadata offers, client_secret_basic by
// default), else sends its id.
func (a *Authorizer) exchangeIDToken(ctx context.Context, t *authTarget, scopes []string, idToken string) (string, error) {
	o := a.cfg.OAuth
	endpoint, offered := o.IdPTokenEndpoint, []string(nil)
	if endpoint == "" {
		iu, err := url.Parse(o.IdPIssuer)
		if err != nil {
			return "", fmt.Errorf("oauth.idp_issuer %q: not a url", o.IdPIssuer)
		}
		m, err := findAuthServerMeta(ctx, a.client, o.IdPIssuer, iu, false)
		if err != nil {
			return "", fmt.Errorf("enterprise IdP: %w", err)
		}
		endpoint, offered = m.TokenEndpoint, m.TokenEndpointAuthMethodsSupported
	}
	eu, err := url.Parse(endpoint)
	if err != nil {
		return "", fmt.Errorf("enterprise IdP token endpoint %q: not a url", endpoint)
	}
	// The ID token goes there: https, or http on a loopback address.
	if err := checkEndpoint(endpoint, eu); err != nil {
		return "", fmt.Errorf("enterprise IdP token endpoint: %w", err)
	}
	params := url.Values{
		"grant_type":           {grantTokenExchange},
		"requested_token_type": {tokenTypeIDJAG},
		"audience":             {t.as.Issuer},
		"resource":             {t.resource},
		"subject_token":        {idToken},
		"subject_token_type":   {tokenTypeIDToken},
	}
	cc := clientcredentials.Config{ClientID: o.IdPClientID, TokenURL: endpoint, Scopes: scopes, EndpointParams: params,
		AuthStyle: oauth2.AuthStyleInParams}
	if o.IdPClientSecret != "" {
		cc.ClientSecret = o.IdPClientSecret
		if pickAuthMethod(offered, true, false) == mcpconfig.AuthClientSecretBasic {
			cc.AuthStyle = oauth2.AuthStyleInHeader
		}
	}
	got, err := cc.Token(a.oauthCtx(ctx))
	if err != nil {
		return "", fmt.Errorf("token exchange at the enterprise IdP %s: %w", endpoint, tokenError(err))
	}
	if typ, _ := got.Extra("issued_token_type").(string); typ != tokenTypeIDJAG {
		return "", fmt.Errorf("token exchange at the enterprise IdP %s: it issued a token of type %q, not an ID-JAG (%s)", endpoint, typ, tokenTypeIDJAG)
	}
	if _, err := jwtExpiry(got.AccessToken); err != nil {
		return "", fmt.Errorf("token exchange at the enterprise IdP %s: the ID-JAG is %w", endpoint, err)
	}
	a.logger.Info("exchanged the ID token for an ID-JAG at the enterprise IdP", "idp", endpoint, "resource", t.resource)
	return got.AccessToken, nil
}

// refusalKey names a credential and the scopes asked with it, without
// keeping the credential.
func refusalKey(cred string, scopes []string) [sha256.Size]byte {
	return sha256.Sum256([]byte(cred + "\x00" + strings.Join(scopes, " ")))
}

// refused returns the error of the authorization server's (or IdP's)
// refusal of cred for scopes, nil when there was none.
func (a *Authorizer) refused(cred string, scopes []string) error {
	k := refusalKey(cred, scopes)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.refusedErr != nil && a.refusedKey == k {
		return fmt.Errorf("%w (refused before; not sent again until the credential changes)", a.refusedErr)
	}
	return nil
}

// noteRefusal returns err with every secret in it masked, and remembers
// it when it is a token endpoint's refusal of cred for scopes.
func (a *Authorizer) noteRefusal(cred string, scopes []string, err error, secrets ...string) error {
	_, isRefusal := errors.AsType[*refusal](err)
	msg := err.Error()
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "***")
		}
	}
	if msg != err.Error() {
		err = errors.New(msg)
	}
	if isRefusal {
		a.mu.Lock()
		a.refusedKey, a.refusedErr = refusalKey(cred, scopes), err
		a.mu.Unlock()
	}
	return err
}
