package mcpgateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// The sign-in entry points a command or the web wires up: SignIn for a
// terminal (loopback redirect, RFC 8252), StartSignIn and FinishSignIn for
// a web callback, SignOut for both. Each is for one (server, user) and
// leaves other users and servers alone; a failed sign-in stores nothing.

// SignIn signs user in to the server: discovery, client identity, then the
// authorization code flow with the redirect on a loopback listener,
// through browser (which opens, prints or fetches the authorization URL).
// For a client-credentials server it gets the service account's token.
// ctx bounds the whole sign-in, the user's time in the browser included.
func (g *Gateway) SignIn(ctx context.Context, user string, browser mcpauth.Browser) error {
	a, err := g.authorizerFor(ctx, user)
	if err != nil {
		return err
	}
	ch, err := a.Probe(ctx)
	if err != nil {
		return g.serverErr("sign in", err)
	}
	if err := a.LockFlow(ctx); err != nil {
		return g.serverErr("sign in", err)
	}
	defer a.UnlockFlow()
	if g.cfg.OAuth.EffectiveGrant() == mcpconfig.GrantClientCredentials {
		_, err = a.ClientCredentials(ctx, ch, nil)
	} else {
		_, err = a.SignInLoopback(ctx, ch, nil, browser)
	}
	return g.serverErr("sign in", err)
}

// signInTTL bounds how long a started web sign-in waits for its callback.
const signInTTL = 10 * time.Minute

// StartSignIn begins a web sign-in of user: it returns the authorization
// URL to send the browser to, whose answer comes to redirectURI (the
// service's callback for this server: one redirect URI per server, so an
// answer cannot be taken for another server's). The state in it is bound
// to user and to this gateway, and kept in Options.Pending with binding
// (PendingSignIn.Binding, "" when the caller binds the sign-in otherwise):
// FinishSignIn or FinishPending, on any replica sharing it, takes it back
// within ten minutes, once. Beyond the caps of PendingSignIns the error
// matches ErrTooManySignIns.
func (g *Gateway) StartSignIn(ctx context.Context, user, redirectURI, binding string) (authURL string, err error) {
	a, err := g.authorizerFor(ctx, user)
	if err != nil {
		return "", err
	}
	if g.cfg.OAuth.Unattended() {
		return "", fmt.Errorf("server %q signs in as a service (%s); no user sign-in", g.cfg.Name, g.cfg.OAuth.EffectiveGrant())
	}
	// Full already? Then refuse before probing the server and registering
	// a client, which a start costs too.
	if err := g.opts.Pending.Room(ctx, user); err != nil {
		return "", g.serverErr("sign in", err)
	}
	ch, err := a.Probe(ctx)
	if err != nil {
		return "", g.serverErr("sign in", err)
	}
	p, authURL, err := a.Begin(ctx, ch, nil, redirectURI)
	if err != nil {
		return "", g.serverErr("sign in", err)
	}
	if err := g.opts.Pending.Put(ctx, p.State(), mcpauth.PendingOf(g.cfg.Name, user, binding, p), time.Now().Add(signInTTL)); err != nil {
		return "", g.serverErr("sign in", fmt.Errorf("keep the sign-in: %w", err))
	}
	return authURL, nil
}

// FinishSignIn completes user's web sign-in with what came back to the
// callback (code, state and, when sent, iss): the state must be one
// StartSignIn gave user and not used yet.
func (g *Gateway) FinishSignIn(ctx context.Context, user, state, code, iss string) error {
	p, err := g.opts.Pending.Take(ctx, state)
	if err != nil {
		if !errors.Is(err, mcpauth.ErrUnknownState) {
			err = fmt.Errorf("read the started sign-in: %w", err)
		}
		return g.serverErr("sign in", err)
	}
	if p.User != user {
		return g.serverErr("sign in", mcpauth.ErrUnknownState)
	}
	return g.FinishPending(ctx, p, state, code, iss)
}

// FinishPending completes the web sign-in p, which the caller took from
// Options.Pending by its state (as a callback that knows neither the server
// nor the user does), with what came back to the callback.
func (g *Gateway) FinishPending(ctx context.Context, p *mcpauth.PendingSignIn, state, code, iss string) error {
	if p.Server != g.cfg.Name {
		return g.serverErr("sign in", mcpauth.ErrUnknownState)
	}
	if g.cfg.OAuth.Unattended() {
		// mcp.json changed since the sign-in started: the server now signs
		// in as a service, which a user's token must never become.
		return g.serverErr("sign in", fmt.Errorf("server %q now signs in as a service (%s); the sign-in started before is void", g.cfg.Name, g.cfg.OAuth.EffectiveGrant()))
	}
	a, err := g.authorizerFor(ctx, p.User)
	if err != nil {
		return g.serverErr("sign in", err)
	}
	if err := a.LockFlow(ctx); err != nil {
		return g.serverErr("sign in", err)
	}
	defer a.UnlockFlow()
	_, err = a.Finish(ctx, a.Resume(p, state), code, state, iss)
	return g.serverErr("sign in", err)
}

// SignOut signs user out of the server: it revokes user's token at the
// authorization server when that advertises revocation (RFC 7009; the
// refresh token, then the access token, bounded by connect_timeout),
// forgets the token and closes user's session. A failed revocation is
// logged and the token forgotten all the same: the user asked to be
// signed out here, and a token kept for a retry would be one more copy.
func (g *Gateway) SignOut(ctx context.Context, user string) error {
	key := mcpauth.TokenKey{Server: g.cfg.Name, User: user}
	if a := g.shared.conns[0].Auth(); a != nil {
		tok, err := g.opts.Tokens.Get(ctx, key)
		switch {
		case err == nil:
			if err := a.Revoke(ctx, tok); err != nil {
				g.logger.WarnContext(ctx, "could not revoke the token at sign-out; forgetting it all the same", logKeyUser, user, logKeyErr, err)
			}
		case !errors.Is(err, mcpauth.ErrNoToken):
			g.logger.WarnContext(ctx, "could not read the token to revoke it; forgetting it all the same", logKeyUser, user, logKeyErr, err)
		}
	}
	if err := g.opts.Tokens.Delete(ctx, key); err != nil {
		return g.serverErr("sign out", err)
	}
	g.mu.Lock()
	u := g.users[user]
	delete(g.users, user)
	g.remaskLocked()
	g.mu.Unlock()
	if u != nil {
		u.v.close()
	}
	return nil
}
