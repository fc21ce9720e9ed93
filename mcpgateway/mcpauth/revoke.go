package mcpauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// Revoke revokes tok at the authorization server that issued it (RFC
// 7009) when its metadata advertises a revocation_endpoint: the refresh
// token first, since revoking it also ends the access tokens issued with
// it at servers that do so (§2.1) and a leftover refresh token is the
// longer-lived risk, then the access token. The whole is bounded by the
// server's connect_timeout. Without a revocation_endpoint it does nothing.
// Errors say what the endpoint answered, never a token.
func (a *Authorizer) Revoke(ctx context.Context, tok *Token) error {
	if tok.Issuer == "" {
		return nil
	}
	connect, _ := a.cfg.Timeouts()
	ctx, cancel := context.WithTimeout(ctx, connect)
	defer cancel()
	// The issuer check is relaxed as for a 2025-03-26 server: the token
	// came from this issuer, whatever its metadata says now.
	as, err := findAuthServerMeta(ctx, a.client, tok.Issuer, a.server, true)
	if err != nil {
		return err
	}
	if as.RevocationEndpoint == "" {
		return nil
	}
	var errs []error
	for _, t := range []struct{ hint, val string }{{"refresh_token", tok.RefreshToken}, {"access_token", tok.AccessToken}} {
		if t.val == "" {
			continue
		}
		if err := a.revokeOne(ctx, as.RevocationEndpoint, tok, t.hint, t.val); err != nil {
			errs = append(errs, fmt.Errorf("revoke the %s: %w", strings.ReplaceAll(t.hint, "_", " "), err))
		}
	}
	return errors.Join(errs...)
}

// revokeOne sends one revocation request, authenticated as the client the
// token was obtained with (RFC 7009 §2.1): its secret in the Authorization
// header (client_secret_basic, RFC 6749 §2.3.1 encoding) or the form
// (client_secret_post), else its client_id alone (a public client).
func (a *Authorizer) revokeOne(ctx context.Context, endpoint string, tok *Token, hint, value string) error {
	form := url.Values{"token": {value}, "token_type_hint": {hint}}
	basic := false
	switch {
	case tok.ClientSecret != "" && tok.AuthMethod == mcpconfig.AuthClientSecretPost:
		form.Set("client_id", tok.ClientID)
		form.Set("client_secret", tok.ClientSecret)
	case tok.ClientSecret != "" && (tok.AuthMethod == mcpconfig.AuthClientSecretBasic || tok.AuthMethod == ""):
		basic = true
	default:
		form.Set("client_id", tok.ClientID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic {
		req.SetBasicAuth(url.QueryEscape(tok.ClientID), url.QueryEscape(tok.ClientSecret))
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return unwrapURLError(err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	_ = resp.Body.Close()
	// 200 also for a token the server no longer knows (§2.2).
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("revocation endpoint answered %s", resp.Status)
	}
	return nil
}
