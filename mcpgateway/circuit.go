package mcpgateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
)

// Circuit states, as CircuitStatus.State shows them.
const (
	CircuitClosed   = "closed"
	CircuitOpen     = "open"
	CircuitHalfOpen = "half-open"
)

// breaker is the server's circuit: a gobreaker two-step breaker, so that the
// outcome of a call is reported by record, the one place outcomes are
// counted, rather than inferred from a returned error.
type breaker = gobreaker.TwoStepCircuitBreaker[struct{}]

// errNotCounted is reported to the breaker for a call that says nothing about
// the server's health (cancelled by its caller, refused before any I/O); it
// is excluded, which also frees the half-open trial slot.
var errNotCounted = errors.New("not counted")

// errServerFailed is reported to the breaker for a transport failure or
// timeout.
var errServerFailed = errors.New("server failed")

// newBreaker builds the circuit from the options. onChange runs inside the
// breaker's lock: it must not call the breaker.
func newBreaker(name string, o Options, onChange func(from, to gobreaker.State)) *breaker {
	failures := uint32(o.CircuitFailures)
	return gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        name,
		MaxRequests: 1,
		Timeout:     o.CircuitOpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
		IsExcluded:  func(err error) bool { return errors.Is(err, errNotCounted) },
		OnStateChange: func(_ string, from, to gobreaker.State) {
			onChange(from, to)
		},
	})
}

// circuitChanged keeps retry_at for the open state of copy c's circuit
// (gobreaker does not expose its expiry), logs the change, and tells the
// Observer when the server's circuit (every copy's together) changed. It
// runs inside c's breaker lock: it calls no breaker.
func (g *Gateway) circuitChanged(c *copyState, from, to gobreaker.State) {
	now := time.Now() // the breaker's clock
	c.mu.Lock()
	c.circuit = to
	if to == gobreaker.StateOpen {
		c.circuitRetryAt = now.Add(g.opts.CircuitOpenFor)
	} else {
		c.circuitRetryAt = time.Time{}
	}
	retryAt := c.circuitRetryAt
	c.mu.Unlock()
	logger := g.logger
	if g.multi() {
		logger = logger.With("copy", c.label)
	}
	switch to {
	case gobreaker.StateOpen:
		logger.Warn("circuit opened", logKeyFrom, from.String(), "retry_at", retryAt)
		g.markDown(c, fmt.Errorf("circuit open after %d consecutive failures", g.opts.CircuitFailures))
	default:
		logger.Info("circuit "+circuitName(to), logKeyFrom, from.String())
	}
	agg := g.recordedCircuit()
	g.mu.Lock()
	changed := agg != g.lastCircuit
	g.lastCircuit = agg
	g.mu.Unlock()
	if changed && g.opts.Observer != nil {
		g.opts.Observer.ObserveCircuit(g.cfg.Name, circuitName(agg))
	}
}

// recordedCircuit is the server's circuit from each copy's last reported
// state: closed while any copy's is, else half-open while any is, else
// open.
func (g *Gateway) recordedCircuit() gobreaker.State {
	agg := gobreaker.StateOpen
	for _, c := range g.copies {
		c.mu.Lock()
		st := c.circuit
		c.mu.Unlock()
		switch st {
		case gobreaker.StateClosed:
			return gobreaker.StateClosed
		case gobreaker.StateHalfOpen:
			agg = gobreaker.StateHalfOpen
		}
	}
	return agg
}

func circuitName(s gobreaker.State) string {
	switch s {
	case gobreaker.StateOpen:
		return CircuitOpen
	case gobreaker.StateHalfOpen:
		return CircuitHalfOpen
	default:
		return CircuitClosed
	}
}

// circuit returns the server's circuit: closed while any copy's is, else
// half-open while any copy's is, else open, letting a trial call through at
// the earliest of the copies' retry times. It must not be called with mu
// held.
func (g *Gateway) circuit() CircuitStatus {
	if !g.multi() {
		return g.copies[0].circuitStatus()
	}
	var agg CircuitStatus
	for _, c := range g.copies {
		cs := c.circuitStatus()
		switch {
		case cs.State == CircuitClosed:
			return cs
		case cs.State == CircuitHalfOpen:
			agg = cs
		case agg.State == "":
			agg = cs
		case agg.State == CircuitOpen && cs.RetryAt.Before(*agg.RetryAt):
			agg = cs
		}
	}
	return agg
}

// circuitStatus returns copy c's circuit and, while open, when it lets a
// trial call through.
func (c *copyState) circuitStatus() CircuitStatus {
	st := c.breaker.State()
	cs := CircuitStatus{State: circuitName(st)}
	if st == gobreaker.StateOpen {
		c.mu.Lock()
		t := c.circuitRetryAt
		c.mu.Unlock()
		cs.RetryAt = &t
	}
	return cs
}

// circuitError says why an execute was refused and when the server is tried
// again. It matches ErrCircuitOpen and ErrUnavailable.
type circuitError struct {
	msg     string
	retryAt time.Time // when a trial call is let through; zero while half-open
}

func (e *circuitError) Error() string { return e.msg }

// RetryAt returns when the circuit lets a trial call through, or the zero
// time when that is not known (half-open, a trial call running).
func (e *circuitError) RetryAt() time.Time { return e.retryAt }

// Is reports whether target is ErrCircuitOpen or ErrUnavailable.
func (e *circuitError) Is(target error) bool {
	return target == ErrCircuitOpen || target == session.ErrUnavailable
}

// circuitErr turns a refusal of the breaker into the self-healing error the
// model sees. cs is the circuit as it was when the call was refused.
func (g *Gateway) circuitErr(cs CircuitStatus) error {
	if cs.State == CircuitOpen && cs.RetryAt != nil {
		now := time.Now()
		in := max(cs.RetryAt.Sub(now).Round(time.Second), 0)
		return &circuitError{msg: fmt.Sprintf("server %q is unavailable: circuit open after %d consecutive failures; retrying at %s (in %s)",
			g.cfg.Name, g.opts.CircuitFailures, cs.RetryAt.Format(time.TimeOnly), in), retryAt: *cs.RetryAt}
	}
	return &circuitError{msg: fmt.Sprintf("server %q is unavailable: circuit half-open, a trial call is running; try again shortly", g.cfg.Name)}
}

// allow asks copy c's circuit whether a call may go ahead. When it may,
// done must be passed to record exactly once. Refused, the error is the
// server's circuit's when c is its only copy.
func (g *Gateway) allow(c *copyState) (done func(error), err error) {
	done, err = c.breaker.Allow()
	if err != nil {
		cs := c.circuitStatus()
		if cs.State == CircuitClosed { // it closed in between
			cs.State = CircuitHalfOpen
		}
		return nil, g.copyCircuitErr(c, cs)
	}
	return done, nil
}

// copyCircuitErr is circuitErr for copy c: the server's own words for a
// server without copies.
func (g *Gateway) copyCircuitErr(c *copyState, cs CircuitStatus) error {
	err := g.circuitErr(cs)
	if !g.multi() {
		return err
	}
	ce := err.(*circuitError)
	ce.msg = strings.Replace(ce.msg, fmt.Sprintf("server %q is unavailable", g.cfg.Name), fmt.Sprintf("%s (%s) is unavailable", c.label, c.where), 1)
	return ce
}

// callStats is the accounting of execute, kept in one place. Guarded by
// Gateway.mu.
type callStats struct {
	calls       int64
	failures    int64 // transport failures, timeouts, isError results and refusals
	consecutive int64 // transport failures and timeouts in a row
}

type outcome int

const (
	outcomeSuccess   outcome = iota
	outcomeToolError         // the server ran the tool and reported isError
	outcomeTransport         // transport failure or failed connect
	outcomeTimeout           // no answer within call_timeout or the caller's deadline
	outcomeCancelled         // the caller cancelled, or the gateway closed
	outcomeRefused           // the circuit refused the call
	outcomeNotRun            // unknown tool, bad inputs, disabled server: nothing sent
)

// add counts one outcome.
func (s *callStats) add(o outcome) {
	switch o {
	case outcomeSuccess:
		s.calls++
		s.consecutive = 0
	case outcomeToolError:
		s.calls++
		s.failures++
		s.consecutive = 0
	case outcomeTransport, outcomeTimeout:
		s.calls++
		s.failures++
		s.consecutive++
	case outcomeCancelled:
		s.calls++
	case outcomeRefused:
		s.calls++
		s.failures++
	}
}

// classify says what a failed execute means for the server: err is what
// Execute is about to return, ctx the caller's.
func (g *Gateway) classify(ctx context.Context, err error) outcome {
	switch {
	case errors.Is(err, session.ErrClosed):
		return outcomeCancelled
	case errors.Is(err, errTooManyUsers):
		// The server was not asked: its users' sessions were all busy.
		return outcomeNotRun
	case errors.Is(err, mcpauth.ErrSignInRequired):
		// The server answered: it wants the user to sign in.
		return outcomeNotRun
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return outcomeCancelled
	case errors.Is(err, context.DeadlineExceeded):
		return outcomeTimeout
	case session.IsServerAnswer(err):
		// The server is alive: it answered with a JSON-RPC error.
		return outcomeToolError
	case errors.Is(err, session.ErrUnavailable):
		// A crash-loop back-off is the server failing; a disabled or
		// unresolved server was never tried.
		if !g.cfg.Enabled || g.cfg.Unresolved != "" {
			return outcomeNotRun
		}
		return outcomeTransport
	}
	return outcomeTransport
}
