package mcpgateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// Copies and failover (DESIGN.md, "Copies and failover"): a server may
// list equivalent copies of itself. The gateway keeps, for each copy and
// whatever the user, a copyState: its own circuit, call counts and
// health. Each view holds one session owner per copy (view.conns) and
// asks the gateway which copies to try, in order (order):
//
//   - priority: the first usable copy, the server's own keys first;
//   - round_robin: the usable copies in turn, per call on the shared view,
//     and from a home copy per user on a per-user server, so that a user's
//     stateful session stays on its copy until that copy fails.
//
// A copy is usable while it is not down and its circuit is not open. A
// transport failure, a timeout or a failed connect on a copy marks it down
// at once, so the next call goes to the next copy; a prober then pings it
// (on the shared view, or lets the next call try it on a per-user server)
// with a back-off that doubles while it flaps, and marks it up again when
// it answers. Only what cannot do harm twice moves to the next copy within
// one call (onCopies); the rest is answered with an isError result
// saying where it may have run.
//
// A server without copies has one copyState, whose circuit is the
// server's: everything here then costs a slice of one.

// copyState is one copy of the gateway's server.
type copyState struct {
	index   int
	cfg     mcpconfig.ServerConfig
	label   string // "copy 2"
	where   string // its URL or command line, as written and masked
	breaker *breaker

	// mu guards everything below; it is never held across I/O, a
	// breaker call, or another lock.
	mu sync.Mutex
	// circuit is the breaker's state as its last change reported it,
	// and circuitRetryAt when an open one lets a trial call through.
	circuit        gobreaker.State
	circuitRetryAt time.Time
	stats          callStats
	// down is set from a failure until a health check answers; downErr
	// says why (masked), probeAt when the next check runs, backoff the
	// wait after it; upSince is when it last came back, to tell a flap.
	down      bool
	downErr   string
	downSince time.Time
	probeAt   time.Time
	backoff   time.Duration
	upSince   time.Time
}

// flapWindow: a copy down again within it of coming back flaps, and
// waits twice as long as last time for its next check (Options.CopyProbe
// the first time), up to the circuit's open time.
const flapWindow = 30 * time.Second

// newCopies builds the copyStates of cfg, in order.
func (g *Gateway) newCopies(cfg mcpconfig.ServerConfig) []*copyState {
	all := cfg.AllCopies()
	out := make([]*copyState, len(all))
	for i, c := range all {
		cs := &copyState{index: i, cfg: c, label: mcpconfig.CopyLabel(i), where: c.Where()}
		name := cfg.Name
		if len(all) > 1 {
			name += " " + cs.label
		}
		cs.breaker = newBreaker(name, g.opts, func(from, to gobreaker.State) { g.circuitChanged(cs, from, to) })
		out[i] = cs
	}
	return out
}

// multi reports whether the server has copies to fail over to.
func (g *Gateway) multi() bool { return len(g.copies) > 1 }

// usable reports whether c may take a call now: not down, and its circuit
// not open (or open past its retry time, when the breaker lets a trial
// through).
func (c *copyState) usable(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.down && (c.circuit != gobreaker.StateOpen || !now.Before(c.circuitRetryAt))
}

// startCopy is where v's calls start: 0 but on a per-user view of a
// round-robin server, whose user keeps the copy it was given.
func (v *view) startCopy() int {
	if v.g.cfg.Policy == mcpconfig.PolicyRoundRobin && v.user != "" {
		return v.home
	}
	return 0
}

// order returns the copies a call of v tries, in order: the usable ones
// (in turn from a rotating start on the shared view of a round-robin
// server), then the others, as a last resort. A server without copies
// returns its one copy without allocating.
func (g *Gateway) order(v *view) []*copyState {
	if !g.multi() {
		return g.copies
	}
	if g.proberDue.Load() && g.proberDue.CompareAndSwap(true, false) {
		g.startProber()
	}
	n := len(g.copies)
	start := v.startCopy()
	if g.cfg.Policy == mcpconfig.PolicyRoundRobin && v.user == "" {
		start = int(g.rr.Add(1) % uint64(n))
	}
	now := time.Now()
	out := make([]*copyState, 0, n)
	var rest []*copyState
	for k := range n {
		c := g.copies[(start+k)%n]
		if c.usable(now) {
			out = append(out, c)
		} else {
			rest = append(rest, c)
		}
	}
	if g.cfg.Policy != mcpconfig.PolicyRoundRobin {
		// A copy that is down is tried again in the server's order.
		slices.SortFunc(rest, func(a, b *copyState) int { return cmp.Compare(a.index, b.index) })
	}
	return append(out, rest...)
}

// listCopy is the copy whose tools v lists and serves: the first usable
// one from v's start, else its start.
func (v *view) listCopy() int {
	g := v.g
	if !g.multi() {
		return 0
	}
	n, start, now := len(g.copies), v.startCopy(), time.Now()
	for k := range n {
		if c := g.copies[(start+k)%n]; c.usable(now) {
			return c.index
		}
	}
	return start
}

// failoverErr reports whether err, on a copy, says the copy failed (so
// it is marked down and the call may move on): a failed connect, a
// transport failure, an HTTP 5xx, a timeout, or the back-off of a crash
// loop — not an answer of the server, a refusal of the user's, or the
// caller giving up.
func failoverErr(ctx context.Context, err error) bool {
	switch {
	case err == nil, ctx.Err() != nil:
		return false
	case errors.Is(err, session.ErrClosed), errors.Is(err, errTooManyUsers), errors.Is(err, errDraining):
		return false
	case session.IsServerAnswer(err):
		return false
	case errors.Is(err, errSecretRequired), errors.Is(err, mcpauth.ErrSignInRequired):
		// The user's to mend, not the copy's failure (onCopies lets the
		// next copy try the call all the same).
		return false
	}
	return true
}

// markDown takes c out of the rotation after err, until a health check
// answers, and starts the prober.
func (g *Gateway) markDown(c *copyState, err error) {
	if !g.multi() {
		return
	}
	now := time.Now()
	msg := g.mask(trimServer(g, err.Error()))
	c.mu.Lock()
	if c.down {
		c.downErr = msg
		c.mu.Unlock()
		return
	}
	switch {
	case c.backoff == 0 || now.Sub(c.upSince) > flapWindow:
		c.backoff = g.opts.CopyProbe
	default: // it flaps: wait longer each time
		c.backoff = min(2*c.backoff, g.opts.CircuitOpenFor)
	}
	c.down, c.downErr, c.downSince, c.probeAt = true, msg, now, now.Add(c.backoff)
	c.mu.Unlock()
	g.logger.Warn("copy down: calls fail over", "copy", c.label, "where", c.where, logKeyErr, msg,
		"serving", g.servingLabel(), "probe_in", c.backoff)
	g.copiesChanged()
	g.startProber()
}

// markUp puts c back in the rotation.
func (g *Gateway) markUp(c *copyState) {
	c.mu.Lock()
	if !c.down {
		c.mu.Unlock()
		return
	}
	c.down, c.downErr, c.upSince = false, "", time.Now()
	c.mu.Unlock()
	g.logger.Info("copy back: it takes calls again", "copy", c.label, "where", c.where, "serving", g.servingLabel())
	g.copiesChanged()
}

// servingCopies returns the copies that take calls now: the first usable one
// (priority), or every usable one (round robin); none when no copy is
// usable, and nil for a server without copies.
func (g *Gateway) servingCopies() []*copyState {
	if !g.multi() {
		return nil
	}
	now := time.Now()
	var out []*copyState
	for _, c := range g.copies {
		if c.usable(now) {
			out = append(out, c)
			if g.cfg.Policy != mcpconfig.PolicyRoundRobin {
				break
			}
		}
	}
	return out
}

// servingLabel names the copies that take calls now ("copy 2", "copy 1,
// copy 2"); "" when none can.
func (g *Gateway) servingLabel() string {
	var names []string
	for _, c := range g.servingCopies() {
		names = append(names, c.label)
	}
	return strings.Join(names, ", ")
}

// copiesChanged refreshes what the model reads when a copy goes down or
// comes back: the description says when the server runs degraded.
func (g *Gateway) copiesChanged() {
	g.mu.Lock()
	base := g.baseDescription
	g.mu.Unlock()
	g.setDescription(base)
}

// degradedNote says, for the model, which copies are down and which one
// serves; "" while every copy is up.
func (g *Gateway) degradedNote() string {
	if !g.multi() {
		return ""
	}
	var down []string
	for _, c := range g.copies {
		c.mu.Lock()
		if c.down {
			down = append(down, fmt.Sprintf("%s (%s) is down", c.label, c.where))
		}
		c.mu.Unlock()
	}
	if len(down) == 0 {
		return ""
	}
	serving := g.servingLabel()
	if serving == "" {
		return fmt.Sprintf("Degraded: every copy is down (%s); calls may fail.", strings.Join(down, "; "))
	}
	return fmt.Sprintf("Degraded: %s; running on %s.", strings.Join(down, "; "), serving)
}

// setDescription publishes base, the description of the last listing, with
// the degraded note when there is one.
func (g *Gateway) setDescription(base string) {
	g.mu.Lock()
	g.baseDescription = base
	g.mu.Unlock()
	desc := base
	if note := g.degradedNote(); note != "" {
		if !strings.HasSuffix(desc, ".") && !strings.HasSuffix(desc, "!") && !strings.HasSuffix(desc, "?") {
			desc += "."
		}
		desc += " " + note
	}
	g.description.Store(&desc)
}

// copyFailure is one copy's failure within a call that tried several.
type copyFailure struct {
	copy *copyState
	err  error
}

// allFailedError is the error of a request every copy failed: it names
// each copy and its failure, and unwraps to the last one's so that callers
// classify it as they would that failure.
type allFailedError struct {
	msg  string
	last error
}

func (e *allFailedError) Error() string { return e.msg }
func (e *allFailedError) Unwrap() error { return e.last }

// failedOver joins the failures of a request that tried several copies,
// masked for the user ctx names, or returns the only one.
func (g *Gateway) failedOver(ctx context.Context, fails []copyFailure) error {
	if len(fails) == 1 {
		return fails[0].err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "server %q: every copy failed", g.cfg.Name)
	for i, f := range fails {
		sep := "; "
		if i == 0 {
			sep = ": "
		}
		fmt.Fprintf(&b, "%s%s (%s): %s", sep, f.copy.label, f.copy.where, trimServer(g, f.err.Error()))
	}
	return &allFailedError{msg: g.maskFor(ctx, b.String()), last: fails[len(fails)-1].err}
}

// onCopies runs f on v's copies in order (order) until one succeeds: each
// copy asked first through its circuit, each attempt counted on it. A
// failure that says the copy failed (failoverErr) marks it down and moves
// on when f says the request may be sent again (again); when it may not,
// the result is a *mayHaveRunError. Any other failure ends the request.
// On a server without copies it is f on the one copy, through its circuit.
func (g *Gateway) onCopies(ctx context.Context, v *view, f func(c *copyState) (again bool, err error)) (outcome, error) {
	var fails []copyFailure
	last := outcomeRefused
	for _, c := range g.order(v) {
		done, err := g.allow(c)
		if err != nil {
			g.attempt(c, outcomeRefused, nil)
			fails = append(fails, copyFailure{c, err})
			continue
		}
		again, err := f(c)
		o := outcomeSuccess
		if err != nil {
			o = g.classify(ctx, err)
		}
		g.attempt(c, o, done)
		switch {
		case err == nil:
			g.markUp(c)
			return o, nil
		case g.multi() && errors.Is(err, mcpauth.ErrSignInRequired):
			// This user has not signed in to this copy (one on another
			// origin signs in on its own): the next copy may take the
			// call, and the copy stays up for every other user.
			fails = append(fails, copyFailure{c, err})
			last = o
			continue
		case !g.multi() || !failoverErr(ctx, err):
			return o, err
		}
		g.markDown(c, err)
		if !again {
			return o, &mayHaveRunError{copy: c, err: err}
		}
		fails = append(fails, copyFailure{c, err})
		last = o
	}
	return last, g.failedOver(ctx, fails)
}

// mayHaveRunError is a call that failed on a copy after it was sent, of a
// tool that could do harm if run twice: it is not sent to another copy,
// and the caller gets an isError result saying so (result).
type mayHaveRunError struct {
	copy *copyState
	err  error
}

func (e *mayHaveRunError) Error() string { return e.err.Error() }
func (e *mayHaveRunError) Unwrap() error { return e.err }

// result is the isError result the caller gets for e.
func (e *mayHaveRunError) result(ctx context.Context, g *Gateway, tool string) *CallResult {
	text := fmt.Sprintf("%s may have run on %s (%s) of server %q, which failed before answering (%s); "+
		"it was not retried on another copy, since running it twice could do harm. "+
		"Check whether it took effect before calling it again.",
		tool, e.copy.label, e.copy.where, g.cfg.Name, g.maskFor(ctx, trimServer(g, e.err.Error())))
	return &CallResult{IsError: true, Content: []map[string]any{{"type": "text", "text": text}}, llmText: text}
}

// trimServer drops the `server "name": ` an error of g's starts with, for
// a message that names the server already.
func trimServer(g *Gateway, msg string) string {
	return strings.TrimPrefix(msg, fmt.Sprintf("server %q: ", g.cfg.Name))
}

// attempt counts one attempt on copy c (its stats when the server has
// copies) and reports it to c's circuit through done (nil when the circuit
// was not asked).
func (g *Gateway) attempt(c *copyState, o outcome, done func(error)) {
	if g.multi() {
		c.mu.Lock()
		c.stats.add(o)
		c.mu.Unlock()
	}
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

// count counts one call of the server, whatever its copies: the stats
// /api/servers shows.
func (g *Gateway) count(o outcome) {
	g.mu.Lock()
	g.stats.add(o)
	g.mu.Unlock()
}

// unavailable says why no copy of the server can be used now (disabled,
// unresolved, in back-off), naming each; nil while one can.
func (g *Gateway) unavailable() error {
	if !g.multi() {
		return g.shared.conns[0].Unavailable()
	}
	var fails []copyFailure
	for _, c := range g.copies {
		err := g.shared.conns[c.index].Unavailable()
		if err == nil {
			return nil
		}
		fails = append(fails, copyFailure{c, err})
	}
	return g.failedOver(context.Background(), fails)
}
