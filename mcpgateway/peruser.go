package mcpgateway

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"time"

	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// A server that needs sign-in (an "oauth" block with the authorization_code
// grant, "per_user": true, or a 401 on its shared session) gets one lazy
// session per user: the Gateway keeps a child Gateway per user, each with
// its own conn (and so its own token, sessions and tool cache), created on
// the user's first call, closed after UserIdle without one, and at most
// MaxUsers of them (the least recently used goes first). The parent keeps
// the circuit, the stats and the draining; its own tools, call and request
// paths hand over to the asking user's child (route). Servers without
// per-user credentials keep one shared session.

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

// userGateway is one user's child, when it was last used and, for a
// server that takes user secrets, the values its config was filled in with.
type userGateway struct {
	g        *Gateway
	lastUsed time.Time
	seq      uint64 // order of last use, for LRU: clocks can tie
	secrets  map[string]string
}

// perUserStatic reports whether cfg asks for a session per user.
func perUserStatic(cfg mcpconfig.ServerConfig) bool {
	return cfg.PerUser || len(cfg.UserValues) > 0 ||
		(cfg.OAuth != nil && cfg.OAuth.EffectiveGrant() == mcpconfig.GrantAuthorizationCode && mcpauth.NeedsAuth(cfg))
}

// route returns the gateway that serves ctx's user: g itself for a shared
// server (and for a child), else the user's child.
func (g *Gateway) route(ctx context.Context) (*Gateway, error) {
	if !g.perUser.Load() {
		return g, nil
	}
	user := UserFrom(ctx)
	if user == "" {
		return nil, g.serverErr("connect", &mcpauth.SignInRequiredError{Server: g.cfg.Name, Reason: "the server keeps a session per user and the call names no user"})
	}
	return g.child(ctx, user)
}

// child returns user's child, creating it. For a server that takes user
// secrets it reads them first (bounded by ctx) and replaces a child whose
// secrets changed since, so that a new or deleted secret is in force at
// the next call; otherwise it does no I/O.
func (g *Gateway) child(ctx context.Context, user string) (*Gateway, error) {
	var vals map[string]string
	if len(g.cfg.UserValues) > 0 {
		var err error
		if vals, err = g.userSecrets(ctx, user); err != nil {
			return nil, g.serverErr("connect", err)
		}
	}
	now := time.Now()
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil, ErrClosed
	}
	g.userSeq++
	var stale []*Gateway
	if u, ok := g.users[user]; ok {
		if maps.Equal(u.secrets, vals) {
			u.lastUsed, u.seq = now, g.userSeq
			g.mu.Unlock()
			return u.g, nil
		}
		delete(g.users, user) // the user changed a secret
		stale = append(stale, u.g)
	}
	o := g.opts
	o.user = user
	o.Logger = g.opts.Logger.With("user", user)
	c := New(withUserSecrets(g.Config(), vals), &o)
	c.parent = g
	if g.childDialer != nil {
		c.conn.dialer = g.childDialer(c.conn)
	}
	if g.users == nil {
		g.users = make(map[string]*userGateway)
		g.stopUsers = make(chan struct{})
		g.wg.Go(g.reapUsers)
	}
	g.users[user] = &userGateway{g: c, lastUsed: now, seq: g.userSeq, secrets: vals}
	stale = append(stale, g.evictLocked(g.opts.MaxUsers, 0, now)...)
	g.remaskLocked()
	g.mu.Unlock()
	g.closeUsers(stale)
	return c, nil
}

// remaskLocked rebuilds the mask of every user's secrets that g's log
// records pass through on top of the server's own (see New): a user's
// session logs through g, and must hide that user's secrets there too.
// What a user is shown is masked with their own only (maskFor).
func (g *Gateway) remaskLocked() {
	if len(g.cfg.UserValues) == 0 {
		return
	}
	var secrets []string
	for _, u := range g.users {
		secrets = append(secrets, u.g.cfg.Secrets...)
	}
	m := mcpconfig.ServerConfig{Secrets: secrets}.Masker()
	g.userMask.Store(&m)
}

// evictLocked removes the children beyond max (least recently used first)
// and those idle longer than idle (zero: none), and returns them to be
// closed outside the lock.
func (g *Gateway) evictLocked(max int, idle time.Duration, now time.Time) []*Gateway {
	var out []*Gateway
	if idle > 0 {
		for user, u := range g.users {
			if now.Sub(u.lastUsed) > idle {
				out = append(out, u.g)
				delete(g.users, user)
			}
		}
	}
	if len(g.users) > max {
		users := make([]string, 0, len(g.users))
		for user := range g.users {
			users = append(users, user)
		}
		sort.Slice(users, func(i, j int) bool { return g.users[users[i]].seq < g.users[users[j]].seq })
		for _, user := range users[:len(users)-max] {
			out = append(out, g.users[user].g)
			delete(g.users, user)
		}
	}
	return out
}

// closeUsers closes children on a goroutine of g's (Close waits for it).
func (g *Gateway) closeUsers(cs []*Gateway) {
	if len(cs) == 0 {
		return
	}
	g.wg.Go(func() {
		for _, c := range cs {
			_ = c.Close()
		}
	})
}

// reapUsers closes idle children until Close.
func (g *Gateway) reapUsers() {
	every := max(g.opts.UserIdle/4, time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-g.stopUsers:
			return
		case now := <-t.C:
			g.mu.Lock()
			idle := g.evictLocked(g.opts.MaxUsers, g.opts.UserIdle, now)
			if len(idle) > 0 {
				g.remaskLocked()
			}
			g.mu.Unlock()
			for _, c := range idle {
				_ = c.Close()
			}
		}
	}
}

// goPerUser switches a shared gateway whose server asked for sign-in to a
// session per user. It reports whether the gateway is per user now.
func (g *Gateway) goPerUser() bool {
	if g.opts.user != "" || g.parent != nil {
		return false
	}
	if !g.perUser.Swap(true) {
		g.logger.Info("server asks users to sign in; one session per user from now on")
	}
	return true
}

// closeChildren closes every child; Close calls it.
func (g *Gateway) closeChildren() {
	g.mu.Lock()
	cs := make([]*Gateway, 0, len(g.users))
	for _, u := range g.users {
		cs = append(cs, u.g)
	}
	g.users = nil
	stop := g.stopUsers
	g.mu.Unlock()
	if stop != nil {
		close(stop)
	}
	for _, c := range cs {
		_ = c.Close()
	}
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
	if g.cfg.OAuth.EffectiveGrant() == mcpconfig.GrantClientCredentials {
		return g.conn.auth, nil
	}
	g.goPerUser()
	c, err := g.child(ctx, user)
	if err != nil {
		return nil, err
	}
	return c.conn.auth, nil
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
	if st.State == StateDisabled || g.cfg.Unresolved != "" {
		return st
	}
	if len(g.cfg.UserValues) > 0 {
		if _, err := g.userSecrets(ctx, user); err != nil {
			st.LastError = g.maskFor(WithUser(ctx, user), err.Error())
			if sr, ok := errors.AsType[*SecretRequiredError](err); ok {
				st.State, st.MissingSecrets = StateNeedsSignIn, sr.Names
			}
			return st
		}
	}
	g.mu.Lock()
	u := g.users[user]
	g.mu.Unlock()
	if u != nil {
		cs := u.g.Status()
		st.State, st.LastError, st.Tools, st.ToolCount, st.PID, st.RetryAt = cs.State, cs.LastError, cs.Tools, cs.ToolCount, cs.PID, cs.RetryAt
		if st.State != StateNeedsSignIn && u.g.conn.auth != nil && !u.g.conn.auth.HasToken(ctx) {
			st.State = StateNeedsSignIn
		}
		return st
	}
	if st.State == StateFailed {
		return st
	}
	st.State, st.LastError = StateIdle, ""
	// Sign-in is known to be needed from the config, or from a 401 that
	// made the server per user.
	oauth := g.cfg.OAuth != nil && g.cfg.OAuth.EffectiveGrant() == mcpconfig.GrantAuthorizationCode
	if mcpauth.NeedsAuth(g.cfg) && (oauth || !perUserStatic(g.cfg)) {
		if _, err := g.opts.Tokens.Get(ctx, mcpauth.TokenKey{Server: g.cfg.Name, User: user}); err != nil {
			st.State = StateNeedsSignIn
		}
	}
	return st
}

// switched reports whether err, from g's shared session, is a sign-in the
// server asked for and made g per user: the caller then routes again.
func (g *Gateway) switched(err error) bool {
	return errors.Is(err, mcpauth.ErrSignInRequired) && g.conn.auth != nil && g.conn.auth.Userless && g.goPerUser()
}
