package mcpauth

import (
	"context"
	"fmt"
)

// Client credentials are bound to the authorization server that issued
// them (2026-07-28, "Authorization Server Binding"): a token, its refresh
// token and a dynamically registered client are kept with the issuer they
// came from (Token.Issuer, Token.TokenURL, Token.ClientID), are refreshed
// and revoked there only, and a sign-in discovers the authorization server
// afresh and registers with it. What is left is to notice a move: a 401
// to a token whose issuer the resource's metadata no longer names.

// migrated checks, on a 401 to a request sent with used (nil: none),
// whether the server's protected-resource metadata now names another
// authorization server than the one used came from. When it does, the
// token is forgotten (its refresh token belongs to the old server, and
// the new one must not see it) and migrated returns why the user signs in
// again; a new grant then registers with the new server. A client
// pre-registered in mcp.json (oauth.client_id, not a Client ID Metadata
// Document, which is portable) is the old server's, so the move is an
// error the operator fixes, rather than its credentials sent to the new
// one. Empty when nothing moved, or when the metadata cannot be read now
// (the refresh goes to the token's own server, which is safe).
func (a *Authorizer) migrated(ctx context.Context, ch Challenge, used *Token) (string, error) {
	if used == nil || used.Issuer == "" {
		return "", nil
	}
	prm, err := findResourceMeta(ctx, a.client, a.server, ch["resource_metadata"])
	if err != nil {
		a.logger.Warn("could not read the protected resource metadata after a 401", "user", a.key.User, "err", err)
		return "", nil
	}
	if prm == nil || sameIssuer(prm.AuthorizationServers[0], used.Issuer) {
		return "", nil
	}
	now := prm.AuthorizationServers[0]
	if o := a.cfg.OAuth; o != nil && o.ClientID != "" && !isCIMDURL(o.ClientID) && used.ClientID == o.ClientID {
		return "", fmt.Errorf("server %q moved from authorization server %s to %s, and oauth.client_id in mcp.json is a client of %s: "+
			"register a client with %s and set it there (the old client's credentials are not sent to the new server)",
			a.key.Server, used.Issuer, now, used.Issuer, now)
	}
	a.logger.Info("the server's authorization server moved; signing in there", "user", a.key.User, "from", used.Issuer, "to", now)
	a.forget(ctx)
	return fmt.Sprintf("the server's authorization server moved from %s to %s", used.Issuer, now), nil
}
