package mcpgateway

import (
	"context"
	"errors"
	"fmt"
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

// circuitChanged keeps retry_at for the open state (gobreaker does not
// expose its expiry) and logs the change.
func (g *Gateway) circuitChanged(from, to gobreaker.State) {
	now := time.Now() // the breaker's clock
	g.mu.Lock()
	if to == gobreaker.StateOpen {
		g.circuitRetryAt = now.Add(g.opts.CircuitOpenFor)
	} else {
		g.circuitRetryAt = time.Time{}
	}
	retryAt := g.circuitRetryAt
	g.mu.Unlock()
	if g.opts.Observer != nil {
		g.opts.Observer.ObserveCircuit(g.cfg.Name, circuitName(to))
	}
	switch to {
	case gobreaker.StateOpen:
		g.logger.Warn("circuit opened", logKeyFrom, from.String(), "retry_at", retryAt)
	default:
		g.logger.Info("circuit "+circuitName(to), logKeyFrom, from.String())
	}
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

// circuit returns the circuit's state and, while open, when it lets a trial
// call through. It must not be called with mu held.
func (g *Gateway) circuit() CircuitStatus {
	if g.breaker == nil { // a user's child: its parent keeps the circuit
		return CircuitStatus{State: CircuitClosed}
	}
	st := g.breaker.State()
	cs := CircuitStatus{State: circuitName(st)}
	if st == gobreaker.StateOpen {
		g.mu.Lock()
		t := g.circuitRetryAt
		g.mu.Unlock()
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

// allow asks the circuit whether an execute may go ahead. When it may, done
// must be passed to record exactly once.
func (g *Gateway) allow() (done func(error), err error) {
	done, err = g.breaker.Allow()
	if err != nil {
		cs := g.circuit()
		if cs.State == CircuitClosed { // it closed in between
			cs.State = CircuitHalfOpen
		}
		return nil, g.circuitErr(cs)
	}
	return done, nil
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

// record is the one place execute outcomes are counted: the stats shown on
// /api/servers and the circuit (through done, nil when the circuit was not
// asked).
func (g *Gateway) record(o outcome, done func(error)) {
	g.mu.Lock()
	switch o {
	case outcomeSuccess:
		g.stats.calls++
		g.stats.consecutive = 0
	case outcomeToolError:
		g.stats.calls++
		g.stats.failures++
		g.stats.consecutive = 0
	case outcomeTransport, outcomeTimeout:
		g.stats.calls++
		g.stats.failures++
		g.stats.consecutive++
	case outcomeCancelled:
		g.stats.calls++
	case outcomeRefused:
		g.stats.calls++
		g.stats.failures++
	}
	g.mu.Unlock()
	if done == nil {
		return
	}
	switch o {
	case outcomeSuccess, outcomeToolError:
		done(nil)
	case outcomeTransport, outcomeTimeout:
		done(errServerFailed)
	default:
		done(errNotCounted)
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
