package mcpgateway

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// The users' sessions of a per-user server are a pool keyed by user, kept
// under g.mu: each entry is a view (view.go) with its own session.Conn and
// tool cache, busy while a call of the user's holds it (acquire, release). A busy
// entry is never closed for another user: past MaxUsers the least recently
// used idle one goes, and when none is idle the new user waits UserWait for
// one to free up, then is refused with errTooManyUsers. Every close of an
// entry is started as a goroutine on g.wg while g.mu is held and g is not
// yet closed (closeLocked), so Close's Wait sees them all, and they run in
// parallel.

// route returns the view that serves ctx's user, and the release the
// caller calls once done with it: the shared one for a shared server, else
// the user's own, held busy until release.
func (g *Gateway) route(ctx context.Context) (*view, func(), error) {
	if !g.perUser.Load() {
		return g.shared, func() {}, nil
	}
	user := UserFrom(ctx)
	if user == "" {
		return nil, nil, g.serverErr("connect", &mcpauth.SignInRequiredError{Server: g.cfg.Name, Reason: "the server keeps a session per user and the call names no user"})
	}
	return g.acquire(ctx, user)
}

// routed runs f on the view that serves ctx's user (route), held busy
// meanwhile, and runs it again, routed anew, when f's error on g's shared
// session made g per user (switched).
func routed[T any](ctx context.Context, g *Gateway, f func(v *view) (T, error)) (T, error) {
	for {
		v, release, err := g.route(ctx)
		if err != nil {
			var zero T
			return zero, err
		}
		out, err := f(v)
		release()
		if v == g.shared && g.switched(err) {
			continue
		}
		return out, err
	}
}

// child returns user's view, creating it, without holding it.
func (g *Gateway) child(ctx context.Context, user string) (*view, error) {
	c, release, err := g.acquire(ctx, user)
	if err != nil {
		return nil, err
	}
	release()
	return c, nil
}

// acquire returns user's view, creating it, busy until the caller calls
// release. For a server that takes user secrets it reads them first
// (bounded by ctx) and retires a view whose secrets changed since, so
// that a new or deleted secret is in force at the next call. When MaxUsers
// views are all busy it waits, bounded by ctx and UserWait, for one to
// go idle.
func (g *Gateway) acquire(ctx context.Context, user string) (*view, func(), error) {
	var vals map[string]string
	if g.cfg.TakesUserSecrets() {
		var err error
		if vals, err = g.userSecrets(ctx, user); err != nil {
			return nil, nil, g.serverErr("connect", err)
		}
	}
	var timeout <-chan time.Time
	for {
		u, freed, err := g.tryAcquire(user, vals)
		if err != nil {
			return nil, nil, err
		}
		if u != nil {
			return u.v, func() { g.release(u) }, nil
		}
		if timeout == nil {
			t := time.NewTimer(g.opts.UserWait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, nil, g.serverErr("connect", fmt.Errorf("waiting for one of the %d users' sessions to free up: %w", g.opts.MaxUsers, ctx.Err()))
		case <-timeout:
			g.logger.Warn("refused a user: every user's session is busy", "max_users", g.opts.MaxUsers)
			return nil, nil, g.serverErr("connect", fmt.Errorf("%w: all %d users' sessions of this server are busy with calls and none freed up within %v; try again shortly",
				errTooManyUsers, g.opts.MaxUsers, g.opts.UserWait))
		}
	}
}

// tryAcquire is one turn of acquire under g.mu: it returns user's entry,
// held, or, when the pool is full of busy entries, a channel closed when
// one goes idle.
func (g *Gateway) tryAcquire(user string, vals map[string]string) (*userView, <-chan struct{}, error) {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, nil, session.ErrClosed
	}
	g.userSeq++
	if u, ok := g.users[user]; ok {
		if maps.Equal(u.secrets, vals) {
			u.busy++
			u.lastUsed, u.seq = now, g.userSeq
			return u, nil, nil
		}
		g.retireLocked(user, u) // the user changed a secret
		defer g.remaskLocked()
	}
	g.evictLocked(g.opts.MaxUsers-1, 0, now)
	if len(g.users) >= g.opts.MaxUsers {
		if g.userFreed == nil {
			g.userFreed = make(chan struct{})
		}
		return nil, g.userFreed, nil
	}
	cfg := withUserSecrets(g.Config(), vals)
	v := g.newView(cfg, user, newMaskLogger(g.opts.Logger.With(logKeyUser, user), cfg.Masker()).With(logKeyServer, cfg.Name))
	if g.childDialer != nil {
		v.conns[0].SetDialer(g.childDialer(v.conns[0]))
	}
	if g.users == nil {
		g.users = make(map[string]*userView)
		g.retiring = make(map[*userView]struct{})
		g.stopUsers = make(chan struct{})
		g.wg.Go(g.reapUsers)
	}
	u := &userView{v: v, lastUsed: now, seq: g.userSeq, secrets: vals, busy: 1}
	g.users[user] = u
	g.remaskLocked()
	return u, nil, nil
}

// release ends a hold of acquire on u.
func (g *Gateway) release(u *userView) {
	g.mu.Lock()
	defer g.mu.Unlock()
	u.busy--
	u.lastUsed = time.Now()
	if u.busy > 0 {
		return
	}
	if u.retired {
		delete(g.retiring, u)
		if !g.closed { // else Close closes it
			g.closeLocked(u.v)
		}
	}
	if g.userFreed != nil {
		close(g.userFreed)
		g.userFreed = nil
	}
}

// retireLocked takes user's entry u out of the pool and closes it, at once
// when idle, else at its last release.
func (g *Gateway) retireLocked(user string, u *userView) {
	delete(g.users, user)
	if u.busy == 0 {
		g.closeLocked(u.v)
		return
	}
	u.retired = true
	g.retiring[u] = struct{}{}
}

// closeLocked closes v on a goroutine of g's, started while g.mu is held so
// that Close, which takes g.mu before it waits, waits for it too.
func (g *Gateway) closeLocked(v *view) {
	g.wg.Go(v.close)
}

// remaskLocked rebuilds the mask of every user's secrets that g's log
// records pass through on top of the server's own (see New): a user's
// session logs through g, and must hide that user's secrets there too.
// What a user is shown is masked with their own only (maskFor).
func (g *Gateway) remaskLocked() {
	if !g.cfg.TakesUserSecrets() {
		return
	}
	var secrets []string
	for _, u := range g.users {
		secrets = append(secrets, u.v.cfg.Secrets...)
	}
	m := mcpconfig.ServerConfig{Secrets: secrets}.Masker()
	g.userMask.Store(&m)
}

// evictLocked retires the idle entries unused for longer than idle (zero:
// none), but those of users with resource subscribers, whose sessions
// carry the subscriptions; then the least recently used idle ones beyond
// max. Busy entries stay. It reports whether it retired any.
func (g *Gateway) evictLocked(max int, idle time.Duration, now time.Time) bool {
	var out []string
	subscribed := g.watches.users()
	for user, u := range g.users {
		if _, sub := subscribed[user]; u.busy == 0 && idle > 0 && now.Sub(u.lastUsed) > idle && !sub {
			out = append(out, user)
		}
	}
	for _, user := range out {
		g.retireLocked(user, g.users[user])
	}
	if over := len(g.users) - max; over > 0 {
		var lru []string
		for user, u := range g.users {
			if u.busy == 0 {
				lru = append(lru, user)
			}
		}
		sort.Slice(lru, func(i, j int) bool { return g.users[lru[i]].seq < g.users[lru[j]].seq })
		for _, user := range lru[:min(over, len(lru))] {
			g.retireLocked(user, g.users[user])
			out = append(out, user)
		}
	}
	return len(out) > 0
}

// reapUsers retires idle views until Close.
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
			if !g.closed && g.evictLocked(g.opts.MaxUsers, g.opts.UserIdle, now) {
				g.remaskLocked()
			}
			g.mu.Unlock()
		}
	}
}

// closeChildren starts the close of every user's view, in parallel, on g.wg;
// Close calls it after setting g.closed, and then waits.
func (g *Gateway) closeChildren() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, u := range g.users {
		g.closeLocked(u.v)
	}
	for u := range g.retiring {
		g.closeLocked(u.v)
	}
	g.users, g.retiring = nil, nil
	if g.stopUsers != nil {
		close(g.stopUsers)
	}
	if g.userFreed != nil {
		close(g.userFreed)
		g.userFreed = nil
	}
}

// SessionCounts counts a server's sessions, for metrics.
type SessionCounts struct {
	// Live counts the sessions up (connected or degraded): the shared
	// one and every user's.
	Live int
	// Processes counts the running stdio child processes of those.
	Processes int
	// Users counts the users' sessions of a per-user server, connected or
	// not, and BusyUsers those with a call in flight.
	Users, BusyUsers int
}

// Sessions counts g's sessions and processes, its users' included.
func (g *Gateway) Sessions() SessionCounts {
	var n SessionCounts
	g.mu.Lock()
	conns := slices.Clone(g.shared.conns)
	for _, u := range g.users {
		conns = append(conns, u.v.conns...)
		if u.busy > 0 {
			n.BusyUsers++
		}
	}
	n.Users = len(g.users)
	g.mu.Unlock()
	for _, c := range conns {
		st := c.Status()
		if st.State == session.StateConnected || st.State == session.StateDegraded {
			n.Live++
		}
		if st.PID != 0 {
			n.Processes++
		}
	}
	return n
}
