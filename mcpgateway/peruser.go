package mcpgateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// A server that needs sign-in (an "oauth" block with the authorization_code
// grant, "per_user": true, or a 401 on its shared session) gets one lazy
// session per user: the Gateway keeps a pool of views by user
// (userpool.go, view.go), each a session.Conn (and so its own token and
// sessions) with its own tool cache, created on the user's first call,
// closed after UserIdle without one, and at most MaxUsers of them (the
// least recently used idle one goes first; a session with a call in flight
// is never closed for another user). The Gateway keeps the circuit, the
// stats and the draining; its tools, call and request paths run on the
// asking user's view (routed). Servers without per-user credentials keep
// one shared view.

// userKey carries the asking user in a ctx.
type userKey struct{}

// WithUser returns ctx naming user as the one asking. The Gateway's
// methods take the user of a call from it (Run takes tools.Call.UserID);
// a per-user server refuses a call without one.
func WithUser(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, userKey{}, user)
}

// UserFrom returns the user WithUser put in ctx, or "".
func UserFrom(ctx context.Context) string {
	u, _ := ctx.Value(userKey{}).(string)
	return u
}

// perUserStatic reports whether cfg asks for a session per user.
func perUserStatic(cfg mcpconfig.ServerConfig) bool {
	return cfg.PerUser || cfg.TakesUserSecrets() ||
		(cfg.OAuth != nil && cfg.OAuth.EffectiveGrant() == mcpconfig.GrantAuthorizationCode && mcpauth.NeedsAuth(cfg))
}

// goPerUser switches a shared gateway whose server asked for sign-in to a
// session per user. It reports whether the gateway is per user now.
func (g *Gateway) goPerUser() bool {
	if !g.perUser.Swap(true) {
		g.logger.Info("server asks users to sign in; one session per user from now on")
	}
	return true
}

// authorizerFor returns user's authorizer, making the gateway per user
// (an explicit sign-in says the server is personal).
func (g *Gateway) authorizerFor(ctx context.Context, user string) (*mcpauth.Authorizer, error) {
	if user == "" {
		return nil, errors.New("sign-in needs a user")
	}
	if !mcpauth.NeedsAuth(g.cfg) {
		return nil, fmt.Errorf("server %q takes no sign-in (a stdio server, or one with a static Authorization header)", g.cfg.Name)
	}
	if g.cfg.OAuth.Unattended() {
		return g.shared.conns[0].Auth(), nil
	}
	g.goPerUser()
	v, err := g.child(ctx, user)
	if err != nil {
		return nil, err
	}
	return v.conns[0].Auth(), nil
}

// StatusFor is Status as user sees it: for a per-user server, the state of
// user's own session, or needs_sign_in when user has no token or has not
// set a secret the server takes (MissingSecrets names them). It reads the
// token store and the user's secrets, bounded by ctx.
func (g *Gateway) StatusFor(ctx context.Context, user string) Status {
	if !g.perUser.Load() && !perUserStatic(g.cfg) {
		return g.Status()
	}
	st := g.Status()
	if st.State == session.StateDisabled || g.cfg.Unresolved != "" {
		return st
	}
	if g.cfg.TakesUserSecrets() {
		if _, err := g.userSecrets(ctx, user); err != nil {
			st.LastError = g.maskFor(WithUser(ctx, user), err.Error())
			if sr, ok := errors.AsType[*secretRequiredError](err); ok {
				st.State, st.MissingSecrets = session.StateNeedsSignIn, sr.Names
			}
			return st
		}
	}
	g.mu.Lock()
	u := g.users[user]
	g.mu.Unlock()
	if u != nil {
		cs := u.v.status()
		st.State, st.LastError, st.Tools, st.ToolCount, st.PID, st.RetryAt = cs.State, cs.LastError, cs.Tools, cs.ToolCount, cs.PID, cs.RetryAt
		st.Copies = g.copyStatuses(u.v)
		if st.State != session.StateNeedsSignIn && u.v.conns[0].Auth() != nil && !u.v.conns[0].Auth().HasToken(ctx) {
			st.State = session.StateNeedsSignIn
		}
		return st
	}
	if st.State == session.StateFailed {
		return st
	}
	st.State, st.LastError = session.StateIdle, ""
	// Sign-in is known to be needed from the config, or from a 401 that
	// made the server per user.
	oauth := g.cfg.OAuth != nil && g.cfg.OAuth.EffectiveGrant() == mcpconfig.GrantAuthorizationCode
	if mcpauth.NeedsAuth(g.cfg) && (oauth || !perUserStatic(g.cfg)) {
		if _, err := g.opts.Tokens.Get(ctx, mcpauth.TokenKey{Server: g.cfg.Name, User: user}); err != nil {
			st.State = session.StateNeedsSignIn
		}
	}
	return st
}

// switched reports whether err, from g's shared session, is a sign-in the
// server asked for and made g per user: the caller then routes again.
func (g *Gateway) switched(err error) bool {
	return errors.Is(err, mcpauth.ErrSignInRequired) && g.shared.conns[0].Auth() != nil && g.shared.conns[0].Auth().Userless && g.goPerUser()
}
