package mcpgateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"

	"github.com/elysia-go/elysia/tools"
)

var (
	_ tools.Tool         = (*Gateway)(nil)
	_ tools.StatusLiner  = (*Gateway)(nil)
	_ tools.Availability = (*Gateway)(nil)
)

// Gateway is one MCP server exposed as a single tools.Tool with the actions
// list and execute (DESIGN.md, "The gateway tool").
//
// It connects lazily: nothing is spawned or dialled until the first call or
// Connect. It holds at most one session, shared by every concurrent caller;
// a dead session is replaced on the next call, and only a crash loop puts the
// server in back-off. All methods are safe for concurrent use. The owner
// calls Close once done; Close is idempotent.
type Gateway struct {
	cfg      ServerConfig
	opts     Options
	logger   *slog.Logger        // masks the server's secrets in every record
	masker   func(string) string // cfg.Mask, built once
	listSeq  atomic.Int64        // numbers this gateway's tools/list requests
	toolName string
	// description is what Description returns: set by New, replaced when a
	// listing brings tool names. Every tree render reads it for every
	// gateway, so it is an atomic load, not a turn at g.mu.
	description atomic.Pointer[string]

	// lifetime is the gateway's own ctx: created in New, cancelled in Close.
	// Sessions (child processes, HTTP streams) hang off it, never off the ctx
	// of the call that happened to open them.
	lifetime context.Context //nolint:containedctx // a long-lived component's lifetime ctx (STYLE.md §7)
	cancel   context.CancelFunc
	// wg owns every goroutine the gateway starts (connect attempts, session
	// watchers, stderr drains, list refreshes); Close waits for it.
	wg sync.WaitGroup

	// dialer, when set (by tests, before the first call), replaces dial.
	dialer func(hsCtx context.Context) (*session, error)

	// breaker is the server's circuit (fixed at construction; it has its own
	// lock, and is never called with mu held).
	breaker *breaker

	// mu guards everything below. It is never held across I/O.
	mu         sync.Mutex
	state      State
	sess       *session
	attempt    *flight // in-flight connect, shared by concurrent callers
	lastErr    string
	deaths     []time.Time // recent session deaths, for crash-loop detection
	retryAt    time.Time   // end of the back-off while state is failed
	httpListen bool        // reconnect HTTP with continuous listening
	cache      *toolSet    // listed tools; nil before the first list
	stale      bool        // cache must be refetched (list_changed, new session)
	listing    *flight     // in-flight list
	stats      callStats
	closed     bool
	closeDone  chan struct{}
	draining   bool          // Drain was called: enter admits nothing
	inflight   int           // calls admitted by enter and not yet left
	drained    chan struct{} // closed when inflight drops to 0 while draining
	// circuitRetryAt is when the open circuit lets a trial call through.
	circuitRetryAt time.Time
}

// flight is one operation shared by concurrent callers: they wait for done,
// then read err (written before done is closed).
type flight struct {
	done chan struct{}
	err  error
	sess *session // a connect's new session, when err is nil
}

// New returns a gateway for cfg. It does no I/O and starts no goroutine. A
// nil opts means the defaults; opts is copied.
func New(cfg ServerConfig, opts *Options) *Gateway {
	o := opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	mask := cfg.masker()
	g := &Gateway{
		cfg:       cfg,
		opts:      o,
		logger:    newMaskLogger(o.Logger, mask).With("gateway", cfg.Name),
		masker:    mask,
		toolName:  ToolName(cfg.Name),
		lifetime:  ctx,
		cancel:    cancel,
		state:     StateIdle,
		closeDone: make(chan struct{}),
	}
	desc := describe(cfg, nil)
	g.description.Store(&desc)
	g.breaker = newBreaker(cfg.Name, o, g.circuitChanged)
	switch {
	case !cfg.Enabled:
		g.state = StateDisabled
	case cfg.Unresolved != "":
		g.state = StateFailed
		g.lastErr = mask(cfg.Unresolved)
	}
	return g
}

// Config returns the server's configuration as given to New.
func (g *Gateway) Config() ServerConfig { return g.cfg }

// Name returns the gateway's tool name, mcp_<server>.
func (g *Gateway) Name() string { return g.toolName }

// Description tells the model what the server is; once the tools have been
// listed, their names are appended.
func (g *Gateway) Description() string { return *g.description.Load() }

// describe returns the gateway's description, with the names of its listed
// tools appended when there are any. It is computed once per listing, since
// every tree render asks for it.
func describe(cfg ServerConfig, names []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "MCP server '%s' (%s) - provides access to multiple tools", cfg.Name, cfg.Transport)
	// sentence starts a new sentence, ending the previous one with a
	// period unless it already ends like a sentence (a configured
	// description often does).
	sentence := func(s string) {
		if !strings.HasSuffix(b.String(), ".") && !strings.HasSuffix(b.String(), "!") && !strings.HasSuffix(b.String(), "?") {
			b.WriteByte('.')
		}
		b.WriteByte(' ')
		b.WriteString(s)
	}
	if d := strings.TrimSpace(cfg.Description); d != "" {
		sentence(d)
	}
	if len(names) > 0 {
		sentence("Tools: " + strings.Join(names, ", "))
	}
	return b.String()
}

// Inputs are action, tool_name and tool_inputs, in that order.
func (g *Gateway) Inputs() []tools.Input {
	return []tools.Input{
		{Name: "action", Type: "string", Default: "list", Enum: []string{"list", "execute"},
			Description: "'list' to see the server's tools and their input schemas, 'execute' to run one"},
		{Name: "tool_name", Type: "string", Description: "the tool to run; required when action is execute"},
		{Name: "tool_inputs", Type: "object", Default: map[string]any{},
			Description: "the tool's inputs, matching its input schema"},
	}
}

// EndsRun is false: the model continues after a gateway call.
func (g *Gateway) EndsRun() bool { return false }

// StatusLine says what a call is about to do ("Running create_todo on todo...").
func (g *Gateway) StatusLine(args map[string]any) string {
	if a, _ := args["action"].(string); a == "execute" {
		if t, _ := args["tool_name"].(string); t != "" {
			return fmt.Sprintf("Running %s on %s...", t, g.cfg.Name)
		}
	}
	return fmt.Sprintf("Listing tools of %s...", g.cfg.Name)
}

// Available reports false, with the reason, while the server cannot be used:
// disabled, unresolved config, draining, in back-off after a crash loop, or
// with its circuit open (the reason says until when).
func (g *Gateway) Available(*tools.Environment) (bool, string) {
	g.mu.Lock()
	draining := g.draining && !g.closed
	g.mu.Unlock()
	if draining {
		return false, g.serverErr("unavailable", ErrDraining).Error()
	}
	if err := g.unavailable(); err != nil {
		return false, err.Error()
	}
	if cs := g.circuit(); cs.State == CircuitOpen {
		return false, g.circuitErr(cs).Error()
	}
	return true, ""
}

// unavailable returns why the server cannot be used now, or nil.
func (g *Gateway) unavailable() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.unavailableLocked()
}

func (g *Gateway) unavailableLocked() error {
	switch {
	case g.closed:
		return ErrClosed
	case !g.cfg.Enabled:
		return g.serverErr("unavailable", fmt.Errorf("%w: disabled in mcp.json", ErrUnavailable))
	case g.cfg.Unresolved != "":
		return g.serverErr("unavailable", fmt.Errorf("%w: %s", ErrUnavailable, g.cfg.Unresolved))
	case g.state == StateFailed && g.opts.Now().Before(g.retryAt):
		return g.serverErr("unavailable", fmt.Errorf("%w: down %d times within %v (failed connects or sessions that died), retrying at %s: %s",
			ErrUnavailable, g.opts.CrashLoopDeaths, g.opts.CrashLoopWindow, g.retryAt.Format(time.RFC3339), g.lastErr))
	}
	return nil
}

// Connect opens the session now instead of on first use (for "eager"
// servers). ctx bounds only the wait; the session belongs to the gateway.
func (g *Gateway) Connect(ctx context.Context) error {
	_, err := g.session(ctx)
	return err
}

// session returns the live session, connecting if there is none. Concurrent
// callers share one attempt, which runs on the gateway's lifetime bounded by
// ConnectTimeout; each caller's wait is bounded by its own ctx.
func (g *Gateway) session(ctx context.Context) (*session, error) {
	g.mu.Lock()
	if err := g.unavailableLocked(); err != nil {
		g.mu.Unlock()
		return nil, err
	}
	if s := g.sess; s != nil && !s.isDead() {
		g.mu.Unlock()
		return s, nil
	}
	a := g.attempt
	if a == nil {
		a = &flight{done: make(chan struct{})}
		g.attempt = a
		g.state = StateConnecting
		g.wg.Add(1)
		go g.connect(a)
	}
	g.mu.Unlock()
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
func (g *Gateway) connect(a *flight) {
	defer g.wg.Done()
	timeout, _ := g.cfg.Timeouts()
	ctx, cancel := context.WithTimeout(g.lifetime, timeout)
	s, err := g.dial(ctx)
	cancel()
	if err != nil && g.lifetime.Err() != nil {
		err = ErrClosed
	}
	err = g.serverErr("connect", err)

	g.mu.Lock()
	g.attempt = nil
	switch {
	case g.closed:
		if err == nil {
			err = ErrClosed
		}
	case err != nil:
		g.lastErr = err.Error()
		g.state = StateIdle
		g.noteDeathLocked()
	default:
		g.sess = s
		g.state = StateConnected
		g.lastErr = ""
		g.stale = true
		g.wg.Add(1)
		go g.watch(s)
		if g.opts.HealthInterval > 0 {
			g.wg.Add(1)
			go g.health(s)
		}
	}
	closedNow := g.closed
	g.mu.Unlock()
	if closedNow && s != nil {
		s.close(g.opts.CloseGrace)
	}
	if err == nil {
		g.logger.Info("gateway connected", "transport", s.transport, "protocol", s.protocol, "pid", s.pid())
	} else {
		g.logger.Warn("gateway connect failed", "err", err)
	}
	a.err = err
	if err == nil {
		a.sess = s
	}
	close(a.done)
}

// watch waits for s to die, then retires it: the state goes back to idle
// (or failed, in a crash loop) and the next call connects again.
func (g *Gateway) watch(s *session) {
	defer g.wg.Done()
	select {
	case <-s.dead:
	case <-g.lifetime.Done():
		return
	}
	g.mu.Lock()
	g.retireLocked(s)
	g.mu.Unlock()
	g.logger.Warn("gateway session ended", "err", s.deadErr)
	s.close(g.opts.CloseGrace)
}

// retireLocked drops s, a session that died, if it is still the current one:
// the gateway goes back to idle with the death recorded, so that the next
// call connects anew and a crash loop brings back-off. A session the server
// terminated (HTTP 404) is not a death: the server answered, so it is up,
// and backing off would lock callers out of a working server. The session
// watcher and a call that saw the death both come here; whichever is first
// retires it. g.mu is held.
func (g *Gateway) retireLocked(s *session) {
	if g.sess != s || !s.isDead() {
		return
	}
	g.sess = nil
	g.lastErr = g.serverErr("session", s.deadErr).Error()
	g.state = StateIdle
	if !errors.Is(s.deadErr, mcptransport.ErrSessionTerminated) {
		g.noteDeathLocked()
	}
}

// noteDeathLocked records a session death or failed connect and enters
// back-off when there were CrashLoopDeaths within CrashLoopWindow.
func (g *Gateway) noteDeathLocked() {
	now := g.opts.Now()
	keep := g.deaths[:0]
	for _, t := range g.deaths {
		if now.Sub(t) < g.opts.CrashLoopWindow {
			keep = append(keep, t)
		}
	}
	g.deaths = append(keep, now)
	if len(g.deaths) >= g.opts.CrashLoopDeaths {
		g.state = StateFailed
		g.retryAt = now.Add(g.opts.CrashBackoff)
		g.deaths = g.deaths[:0]
	}
}

// Close ends the session and the child process, waits for every goroutine
// of the gateway, and makes in-flight and later calls fail with ErrClosed.
// It is idempotent, safe to call concurrently, and bounded by CloseGrace
// plus the transports' own shutdown.
func (g *Gateway) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		<-g.closeDone
		return nil
	}
	g.closed = true
	s := g.sess
	g.sess = nil
	g.state = StateClosed
	g.mu.Unlock()

	g.cancel()
	if s != nil {
		s.close(g.opts.CloseGrace)
	}
	g.wg.Wait()
	g.logger.Info("gateway closed")
	close(g.closeDone)
	return nil
}

// callCtx derives a call's ctx: the caller's, bounded by timeout, and ended
// by Close.
func (g *Gateway) callCtx(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	stop := context.AfterFunc(g.lifetime, cancel)
	return ctx, func() { stop(); cancel() }
}

// callErr turns a failed request into the error callers see: ErrClosed after
// Close, the caller's ctx error when it ended, else the transport error.
func (g *Gateway) callErr(ctx context.Context, op string, err error) error {
	if g.lifetime.Err() != nil {
		return g.serverErr(op, ErrClosed)
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return g.serverErr(op, ctx.Err())
	}
	return g.serverErr(op, err)
}
