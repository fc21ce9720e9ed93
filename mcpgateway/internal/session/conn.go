package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway/internal/ring"
	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// Conn owns the sessions of one MCP server. It is the one place a session is
// created, published, retired and closed, and it owns every goroutine it
// starts (connect attempts, session watchers, health pings, stderr drains,
// exit watchers and the feed of states to a StateObserver). Close therefore
// ends every session it ever created — current, retired by a call, or still
// being dialled — and waits for all of its goroutines.
//
// The Gateway (the tool facade: actions, cache, circuit, stats, drain) sits on
// top and reaches the server only through a Conn. All methods are safe for
// concurrent use.
type Conn struct {
	cfg    mcpconfig.ServerConfig
	opts   Options
	logger *slog.Logger
	mask   func(string) string
	// preflight is why a stdio server's command cannot start, found when
	// the conn was made; the state is failed for it until a connect is
	// tried. "" when the command was found.
	preflight string

	// lifetime is the conn's own ctx: created in New, cancelled in close.
	// Sessions (child processes, HTTP streams) hang off it, never off the ctx
	// of the call that happened to open them.
	lifetime context.Context //nolint:containedctx // a long-lived component's lifetime ctx (STYLE.md §7)
	cancel   context.CancelFunc
	// wg owns every goroutine the conn starts; close waits for it.
	wg sync.WaitGroup
	// seq numbers the requests the gateway sends raw (tools/list, and
	// tools/call before 2026-07-28: callTool) and the progress tokens of
	// calls.
	seq atomic.Int64
	// logs keeps the server's last log messages.
	logs *ring.Buffer[LogEntry]
	// history keeps the last requests and notifications (history.go).
	history *history
	// roots are the folders roots/list answers with: cfg.Roots until a
	// reload changes them (setRoots).
	roots atomic.Pointer[[]string]

	// dialer, when set (by tests, before the first call), replaces dial.
	dialer func(hsCtx context.Context) (*Session, error)
	// hs remembers how the server answered server/discover (discover.go).
	hs *Handshake
	// getHeld is set once a connect waited out getStreamWait for the
	// standalone GET's answer: the server holds its headers back, and
	// later connects do not wait (awaitGetStream).
	getHeld atomic.Bool
	// auth holds the OAuth state of the conn's user; nil for stdio servers
	// and servers with a static Authorization header.
	auth *mcpauth.Authorizer
	// stateWake (buffer of one) wakes feedStates after a change of state,
	// when opts.States is set; a value waiting in it means "look again".
	stateWake chan struct{}

	// mu guards everything below. It is never held across I/O.
	mu        sync.Mutex
	state     State
	sess      *Session              // the published session; nil when none
	open      map[*Session]struct{} // every session created and not yet closed
	attempt   *flight               // in-flight connect, shared by concurrent callers
	lastErr   string
	deaths    []time.Time // recent session deaths, for crash-loop detection
	retryAt   time.Time   // end of the back-off while state is failed
	feeding   bool        // feedStates has been started
	connects  int         // successful connects so far
	closed    bool
	closeDone chan struct{}
}

// flight is one operation shared by concurrent callers: they wait for done,
// then read err (written before done is closed).
type flight struct {
	done chan struct{}
	err  error
	sess *Session // a connect's new session, when err is nil
}

// New returns the connection owner of cfg. It does no I/O and starts no
// goroutine.
func New(cfg mcpconfig.ServerConfig, o Options, logger *slog.Logger, mask func(string) string) *Conn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &Conn{
		cfg:       cfg,
		opts:      o,
		logger:    logger,
		mask:      mask,
		lifetime:  ctx,
		cancel:    cancel,
		state:     StateIdle,
		open:      map[*Session]struct{}{},
		closeDone: make(chan struct{}),
	}
	c.logs = ring.New[LogEntry](LogLines)
	c.history = newHistory(o.User, mask)
	c.hs = o.Handshake
	if c.hs == nil {
		c.hs = &Handshake{}
	}
	c.roots.Store(&cfg.Roots)
	if cfg.Transport == mcpconfig.TransportStdio && cfg.Enabled && cfg.Unresolved == "" && cfg.Command != "" {
		// A command that is not there fails every connect: say so from
		// the start rather than show the server idle until its first call.
		if err := lookCommand(cfg); err != nil {
			c.preflight = mask(c.ServerErr("connect", err).Error()) // as a connect would say it
		}
	}
	if o.States != nil {
		c.stateWake = make(chan struct{}, 1)
	}
	if mcpauth.NeedsAuth(cfg) {
		c.auth = mcpauth.NewAuthorizer(cfg, o.User, o.Tokens, o.Browser, logger)
		c.auth.Userless = o.User == "" && !cfg.OAuth.Unattended()
	}
	switch {
	case !cfg.Enabled:
		c.state = StateDisabled
	case cfg.Unresolved != "":
		c.state = StateFailed
		c.lastErr = mask(cfg.Unresolved)
	}
	return c
}

// ServerErr wraps err for operation op, masking the server's secrets.
// Wrapping an error that already names this server only masks it again.
func (c *Conn) ServerErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var se *ServerError
	if errors.As(err, &se) && se.Server == c.cfg.Name {
		return err
	}
	// A sign-in needed reads as such, not as the transport error that
	// carried it up through mcp-go.
	if sr, ok := errors.AsType[*mcpauth.SignInRequiredError](err); ok {
		err = sr
	}
	return &ServerError{
		Server: c.cfg.Name,
		Op:     op,
		Err:    err,
		msg:    c.mask(fmt.Sprintf("server %q: %s: %v", c.cfg.Name, op, err)),
	}
}

// register makes s one of the conn's sessions, so that close ends it
// whatever becomes of it. The dial sets up what close ends (the child
// process, the HTTP client) before, and attaches the client after
// (session.attach). It reports false once the conn is closed: close's
// sweeps may be over, so the caller closes s itself.
func (c *Conn) register(s *Session) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.open[s] = struct{}{}
	return true
}

// adopt registers s, or closes it and returns ErrClosed.
func (c *Conn) adopt(s *Session) error {
	if !c.register(s) {
		s.close(c.opts.CloseGrace)
		return ErrClosed
	}
	return nil
}

// closeSession ends s (bounded by CloseGrace) and forgets it.
func (c *Conn) closeSession(s *Session) {
	s.close(c.opts.CloseGrace)
	c.mu.Lock()
	delete(c.open, s)
	c.mu.Unlock()
}

// goFunc runs f on a goroutine owned by the conn: close waits for it.
func (c *Conn) goFunc(f func()) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
}

// Roots returns the roots in force. The slice is never modified.
func (c *Conn) Roots() []string { return *c.roots.Load() }

// SetRoots replaces the roots and tells the open session, if any, with
// notifications/roots/list_changed (the roots capability declares
// listChanged), so the server asks roots/list again; a session opened later
// gets the new roots when it asks. The notification is sent on a goroutine
// the conn owns, bounded by the call timeout.
func (c *Conn) SetRoots(roots []string) {
	roots = slices.Clone(roots)
	c.roots.Store(&roots)
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.sess; s != nil && !c.closed {
		c.rootsChangedLocked(s)
	}
}

// rootsChangedLocked sends notifications/roots/list_changed on s from a
// goroutine the conn owns; c.mu is held and the conn is not closed. A
// 2026-07-28 server is not told: it asks for the roots with each request
// that needs them (input_required).
func (c *Conn) rootsChangedLocked(s *Session) {
	if mcp.IsModernProtocol(s.protocol) {
		return
	}
	c.goFunc(func() {
		_, timeout := c.cfg.Timeouts()
		ctx, cancel := context.WithTimeout(c.lifetime, timeout)
		defer cancel()
		stop := s.WedgeGuard(ctx, "roots/list_changed")
		err := s.client.RootListChanges(ctx)
		stop()
		if err != nil {
			c.logger.Warn("notifications/roots/list_changed not sent", logKeyErr, err)
			return
		}
		c.logger.Info("roots changed", "roots", len(c.Roots()))
	})
}

// Unavailable returns why the server cannot be used now, or nil.
func (c *Conn) Unavailable() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unavailableLocked()
}

func (c *Conn) unavailableLocked() error {
	switch {
	case c.closed:
		return ErrClosed
	case !c.cfg.Enabled:
		return c.ServerErr("unavailable", fmt.Errorf("%w: disabled in mcp.json", ErrUnavailable))
	case c.cfg.Unresolved != "":
		return c.ServerErr("unavailable", fmt.Errorf("%w: %s", ErrUnavailable, c.cfg.Unresolved))
	case c.state == StateFailed && time.Now().Before(c.retryAt):
		return c.ServerErr("unavailable", &backoffError{retryAt: c.retryAt, msg: fmt.Sprintf("%v: down %d times within %v (failed connects or sessions that died), retrying at %s: %s",
			ErrUnavailable, c.opts.CrashLoopDeaths, c.opts.CrashLoopWindow, c.retryAt.Format(time.RFC3339), c.lastErr)})
	}
	return nil
}

// backoffError refuses a call while the server is in back-off after a crash
// loop. It matches ErrUnavailable and says when the server is tried again.
type backoffError struct {
	msg     string
	retryAt time.Time
}

func (e *backoffError) Error() string { return e.msg }

// Is reports whether target is ErrUnavailable.
func (e *backoffError) Is(target error) bool { return target == ErrUnavailable }

// RetryAt is when the server is tried again.
func (e *backoffError) RetryAt() time.Time { return e.retryAt }

// Current returns the published session when it is alive, else nil.
func (c *Conn) Current() *Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess != nil && !c.sess.isDead() {
		return c.sess
	}
	return nil
}

// Session returns the live session, connecting if there is none. Concurrent
// callers share one attempt, which runs on the conn's lifetime bounded by
// connect_timeout; each caller's wait is bounded by its own ctx.
func (c *Conn) Session(ctx context.Context) (*Session, error) {
	c.mu.Lock()
	if err := c.unavailableLocked(); err != nil {
		c.mu.Unlock()
		return nil, err
	}
	if s := c.sess; s != nil && !s.isDead() {
		c.mu.Unlock()
		return s, nil
	}
	a := c.attempt
	started := a == nil
	if started {
		a = &flight{done: make(chan struct{})}
		c.attempt = a
		c.state = StateConnecting
		c.goFunc(func() { c.connect(a) })
	}
	c.mu.Unlock()
	if started {
		c.stateChanged()
	}
	select {
	case <-a.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if a.err != nil {
		return nil, a.err
	}
	// The attempt's own session, even if it has died since: the call on it
	// then fails with the death's cause, which the caller's retry handles,
	// rather than with a misleading "closed".
	return a.sess, nil
}

// connect runs one connect attempt and publishes its outcome.
func (c *Conn) connect(a *flight) {
	timeout, _ := c.cfg.Timeouts()
	ctx, cancel := context.WithTimeout(c.lifetime, timeout)
	roots := c.roots.Load() // what the server may ask for during the handshake
	s, err := c.safeDial(ctx)
	cancel()
	if err != nil && c.lifetime.Err() != nil {
		err = ErrClosed
	}
	err = c.ServerErr("connect", err)

	c.mu.Lock()
	c.attempt = nil
	switch {
	case c.closed:
		if err == nil {
			err = ErrClosed
		}
	case errors.Is(err, mcpauth.ErrSignInRequired):
		// The server is up; the user is not signed in. No back-off.
		c.lastErr = err.Error()
		c.state = StateNeedsSignIn
	case err != nil:
		// Failed, with the reason, until the next attempt (or back-off).
		c.lastErr = err.Error()
		c.state, c.retryAt = StateFailed, time.Time{}
		c.noteDeathLocked()
	default:
		c.sess = s
		c.state = StateConnected
		c.lastErr = ""
		c.goFunc(func() { c.watch(s) })
		if c.opts.HealthInterval > 0 {
			c.goFunc(func() { c.health(s) })
		}
		if mcp.IsModernProtocol(s.protocol) {
			c.goFunc(func() { c.listen(s) })
		}
		if c.roots.Load() != roots {
			// New roots came while the session was being dialled, after
			// the server may have read the old ones.
			c.rootsChangedLocked(s)
		}
		c.connects++
		if up := c.opts.OnSessionUp; up != nil {
			first := c.connects == 1
			c.goFunc(func() { up(c.lifetime, s, first) })
		}
	}
	closedNow := c.closed
	c.mu.Unlock()
	if closedNow && s != nil {
		c.closeSession(s)
	}
	if !closedNow {
		c.stateChanged()
	}
	if err == nil {
		c.logger.Info("gateway connected", "transport", s.transport, "protocol", s.protocol, "pid", s.pid())
	} else {
		c.logger.Warn(LogConnectFailed, logKeyErr, err)
	}
	a.err = err
	if err == nil {
		a.sess = s
	}
	close(a.done)
}

// safeDial is dial, with a panic inside the MCP client (input from a
// server must never crash the service or the CLI) turned into the connect's
// error. What the panicking attempt registered is closed with the conn.
func (c *Conn) safeDial(ctx context.Context) (s *Session, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("mcp client failed: %v", r)
			c.logger.Error("mcp client panicked while connecting", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	return c.dial(ctx)
}

// watch waits for s to die, then retires and closes it: the state goes back
// to idle (or failed, in a crash loop) and the next call connects again.
// Then it calls OnSessionDown, if set, on its own goroutine, which the conn
// owns. When the conn closes first, close ends s and no hook runs: the
// watcher returns at once, even when s's death (close marks s dead) is
// what it sees.
func (c *Conn) watch(s *Session) {
	select {
	case <-s.dead:
	case <-c.lifetime.Done():
		return
	}
	if c.lifetime.Err() != nil {
		return
	}
	c.Retire(s)
	c.logger.Warn("gateway session ended", logKeyErr, s.deadErr)
	c.closeSession(s)
	if down := c.opts.OnSessionDown; down != nil && c.lifetime.Err() == nil {
		down(c.lifetime, s)
	}
}

// Retire drops s, a session that died, if it is still the published one, so
// the next call connects without waiting for the watcher. The watcher (or
// close) still closes s.
func (c *Conn) Retire(s *Session) {
	c.mu.Lock()
	retired := c.retireLocked(s)
	c.mu.Unlock()
	if retired {
		c.stateChanged()
	}
}

// retireLocked is retire with mu held. The gateway goes back to idle with the
// death recorded, so that a crash loop brings back-off. A session the server
// terminated (HTTP 404) is not a death: the server answered, so it is up, and
// backing off would lock callers out of a working server. It reports whether
// it retired s; the caller then calls stateChanged once mu is released.
func (c *Conn) retireLocked(s *Session) bool {
	if c.sess != s || !s.isDead() {
		return false
	}
	c.sess = nil
	c.lastErr = c.ServerErr("session", s.deadErr).Error()
	c.state = StateIdle
	if !errors.Is(s.deadErr, mcptransport.ErrSessionTerminated) {
		c.noteDeathLocked()
	}
	return true
}

// noteDeathLocked records a session death or failed connect and enters
// back-off when there were CrashLoopDeaths within CrashLoopWindow. Its
// callers (connect, retire) report the change of state; the end of the
// back-off, which no event marks, is reported by feedStates' timer.
func (c *Conn) noteDeathLocked() {
	now := time.Now()
	keep := c.deaths[:0]
	for _, t := range c.deaths {
		if now.Sub(t) < c.opts.CrashLoopWindow {
			keep = append(keep, t)
		}
	}
	c.deaths = append(keep, now)
	if len(c.deaths) >= c.opts.CrashLoopDeaths {
		c.state = StateFailed
		c.retryAt = now.Add(c.opts.CrashBackoff)
		c.deaths = c.deaths[:0]
	}
}

// Close ends every session the conn created and every goroutine it started.
// It is idempotent and safe to call concurrently; each session's close is
// bounded by CloseGrace, and they are closed in parallel.
func (c *Conn) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		<-c.closeDone
		return
	}
	c.closed = true
	c.sess = nil
	c.state = StateClosed
	c.mu.Unlock()

	c.cancel()
	// A connect attempt still running sees the cancelled lifetime, fails
	// and closes what it dialled; sessions it creates meanwhile are caught
	// by the second sweep, after its goroutine is gone.
	c.closeOpen()
	c.wg.Wait()
	c.closeOpen()
	if c.auth != nil {
		// The authorizer's client has a pool of its own (metadata, token
		// and revocation requests); its keep-alive connections would
		// otherwise outlive the conn, one pool per user's child.
		c.auth.CloseIdleConnections()
	}
	close(c.closeDone)
}

// closeOpen closes every registered session, in parallel.
func (c *Conn) closeOpen() {
	c.mu.Lock()
	open := make([]*Session, 0, len(c.open))
	for s := range c.open {
		open = append(open, s)
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range open {
		wg.Go(func() { c.closeSession(s) })
	}
	wg.Wait()
}

// CallCtx derives a call's ctx: the caller's, bounded by timeout, and ended
// by close.
func (c *Conn) CallCtx(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	stop := context.AfterFunc(c.lifetime, cancel)
	return ctx, func() { stop(); cancel() }
}

// CallErr turns a failed request into the error callers see: ErrClosed after
// close, the caller's ctx error when it ended, else the transport error.
func (c *Conn) CallErr(ctx context.Context, op string, err error) error {
	if c.lifetime.Err() != nil {
		return c.ServerErr(op, ErrClosed)
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return c.ServerErr(op, ctx.Err())
	}
	return c.ServerErr(op, err)
}

// Status is the conn's part of a Status.
type Status struct {
	State   State
	LastErr string
	RetryAt time.Time // zero unless in back-off
	PID     int
	// ProtocolVersion is the version the live session negotiated; ""
	// when there is none.
	ProtocolVersion string
}

// Status returns a snapshot; it does no I/O.
func (c *Conn) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := Status{State: c.state, LastErr: c.lastErr, PID: c.sess.pid()}
	if st.State == StateIdle && st.LastErr == "" && c.preflight != "" {
		st.State, st.LastErr = StateFailed, c.preflight // until a connect says otherwise
	}
	if c.sess != nil {
		st.ProtocolVersion = c.sess.protocol
	}
	if st.State == StateFailed && !c.retryAt.IsZero() {
		if time.Now().Before(c.retryAt) {
			st.RetryAt = c.retryAt
		} else {
			st.State = StateIdle
		}
	}
	return st
}
