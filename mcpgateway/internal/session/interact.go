package session

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/tools"
)

// activeCall is one tools/call in flight on a session: whom it is for and
// where its server's messages go (progress, questions, warnings).
type activeCall struct {
	token  string // the progress token the call carries
	server string
	tool   string
	user   string
	emit   tools.Emitter // never nil; questions go to it directly
	// clock bounds the call: extend moves its deadline on after a
	// progress report, hold stops the idle deadline while the user is
	// asked something (an approval); max_call_time still runs. Its ctx
	// is the call's: what the server asks the model for the call
	// (sampling) ends with it.
	clock *callClock
	// relay takes the call's progress and warnings to emit without ever
	// blocking the transport's read loop.
	relay *relay

	// mu guards progress, warnings, questions, samples and clientLogs.
	mu        sync.Mutex
	progress  float64 // the last progress reported; it only grows
	warnings  int     // log messages relayed as warnings
	questions int     // elicitations the server sent, answered or not
	samples   int     // sampling requests taken for the call
	// clientLogs counts the log messages queued for a ClientLogger.
	clientLogs int
}

// activeCallKey is the context key of the activeCall a request is made for.
// mcp-go hands a server's request (elicitation, sampling) that arrives on a
// call's own stream to its handler with the call's ctx, so the call is found
// there; it is request metadata, the user and stream the request belongs to.
type activeCallKey struct{}

// withCall returns ctx carrying ac.
func withCall(ctx context.Context, ac *activeCall) context.Context {
	return context.WithValue(ctx, activeCallKey{}, ac)
}

// asked counts a question (elicitation) the call's server sent and returns
// how many it has sent, this one included.
func (ac *activeCall) asked() int {
	ac.mu.Lock()
	defer ac.mu.Unlock()
	ac.questions++
	return ac.questions
}

// callFor returns the call a server's request or notification belongs to:
// the one its ctx carries, else the session's only call in flight. With
// several calls in flight and nothing to tell them apart it returns nil:
// a question must never reach a user whose call did not cause it.
func (s *Session) callFor(ctx context.Context) *activeCall {
	if ac, ok := ctx.Value(activeCallKey{}).(*activeCall); ok {
		return ac
	}
	s.callsMu.Lock()
	defer s.callsMu.Unlock()
	if len(s.calls) != 1 {
		return nil
	}
	for _, ac := range s.calls {
		return ac
	}
	return nil
}

// track registers ac as in flight on s until the returned func is called.
func (s *Session) track(ac *activeCall) (untrack func()) {
	s.callsMu.Lock()
	if s.calls == nil {
		s.calls = map[string]*activeCall{}
	}
	s.calls[ac.token] = ac
	s.callsMu.Unlock()
	return func() {
		s.callsMu.Lock()
		delete(s.calls, ac.token)
		s.callsMu.Unlock()
	}
}

// byToken returns the call in flight with progress token token, or nil.
func (s *Session) byToken(token string) *activeCall {
	s.callsMu.Lock()
	defer s.callsMu.Unlock()
	return s.calls[token]
}

// errCallTimeout is the cause of a call ended by its idle deadline
// (call_timeout since the start or the last progress).
var errCallTimeout = fmt.Errorf("no answer within call_timeout: %w", context.DeadlineExceeded)

// errMaxCallTime is the cause of a call ended by max_call_time, however much
// progress it reported.
var errMaxCallTime = fmt.Errorf("still running after max_call_time: %w", context.DeadlineExceeded)

// callClock bounds a call: its ctx ends call_timeout after the start or
// after the last extend, at max_call_time at the latest, and when the conn
// closes; context.Cause says which deadline ended it. While a hold is in
// force (the user is asked something) the idle deadline does not run; it
// starts again from its release. One value holds what the bounds share,
// so a call pays for its clock once.
type callClock struct {
	ctx         context.Context //nolint:containedctx // the call's, handed out by progressCtx
	cancelInner context.CancelCauseFunc
	cancelOuter context.CancelFunc
	idle        time.Duration
	timer       *time.Timer // the idle deadline
	stopLife    func() bool // ends the watch on the conn's lifetime

	mu   sync.Mutex // guards held
	held int
}

// progressCtx starts the clock of a call made under ctx (callClock); stop
// it once the call has returned.
func (c *Conn) progressCtx(ctx context.Context) *callClock {
	maxCall, _ := c.cfg.Limits()
	_, idle := c.cfg.Timeouts()
	k := &callClock{idle: idle}
	outer, cancelOuter := context.WithTimeoutCause(ctx, maxCall, errMaxCallTime)
	k.ctx, k.cancelInner = context.WithCancelCause(outer)
	k.cancelOuter = cancelOuter
	k.timer = time.AfterFunc(idle, k.idleOut)
	k.stopLife = context.AfterFunc(c.lifetime, k.closed)
	return k
}

func (k *callClock) idleOut() { k.cancelInner(errCallTimeout) }
func (k *callClock) closed()  { k.cancelInner(ErrClosed) }

// extend moves the idle deadline on, after a sign of life of the call.
func (k *callClock) extend() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ctx.Err() == nil && k.held == 0 {
		k.timer.Reset(k.idle)
	}
}

// hold stops the idle deadline until release is called (once counts;
// holds nest).
func (k *callClock) hold() (release func()) {
	k.mu.Lock()
	k.held++
	k.timer.Stop()
	k.mu.Unlock()
	return sync.OnceFunc(func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		if k.held--; k.held == 0 && k.ctx.Err() == nil {
			k.timer.Reset(k.idle)
		}
	})
}

// stop ends the call's ctx and its timers.
func (k *callClock) stop() {
	k.timer.Stop()
	k.stopLife()
	k.cancelInner(context.Canceled)
	k.cancelOuter()
}

// progressed handles notifications/progress, on the transport's read loop:
// the call it belongs to gets a status event (through its relay, never
// waiting for the user's stream), and its deadline moves on. Progress that
// does not grow, or for no call in flight, is dropped.
func (c *Conn) progressed(s *Session, n mcp.JSONRPCNotification) {
	f := n.Params.AdditionalFields
	token := fmt.Sprint(f["progressToken"])
	ac := s.byToken(token)
	progress, ok := number(f["progress"])
	if ac == nil || !ok {
		return
	}
	ac.mu.Lock()
	grew := progress > ac.progress
	if grew {
		ac.progress = progress
	}
	ac.mu.Unlock()
	if !grew {
		return
	}
	ac.clock.extend()
	p := tools.ProgressPayload{CallID: ac.token, Server: ac.server, Tool: ac.tool, Progress: progress}
	if total, ok := number(f["total"]); ok && total > 0 {
		p.Total = &total
	}
	msg, _ := f["message"].(string)
	// Mask before cutting: a secret cut in two no longer matches the mask,
	// and its first half would go out.
	p.Message = truncate(c.mask(msg), 200)
	p.Text = progressText(p)
	ac.relay.progress(p)
}

// progressText is the status line of a progress report.
func progressText(p tools.ProgressPayload) string {
	text := fmt.Sprintf("%s on %s: %g", p.Tool, p.Server, p.Progress)
	if p.Total != nil {
		text = fmt.Sprintf("%s on %s: %g of %g", p.Tool, p.Server, p.Progress, *p.Total)
	}
	if p.Message != "" {
		text += " - " + p.Message
	}
	return text
}

// number reads a number of a notification: float64 or json.Number from the
// wire, any Go number from mcp-go's in-process transport.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case float32:
		return float64(n), true
	case interface{ Float64() (float64, error) }:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// truncate cuts s to at most n bytes, on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	out, cut := (&Budget{Left: n}).Take(s)
	if cut {
		return out + "..."
	}
	return out
}
