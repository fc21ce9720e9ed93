package mcpgateway

import (
	"context"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
)

// Drain stops the gateway taking new calls and waits for the calls in flight
// (Run, Execute, List) to finish. New calls fail at once with an error
// matching errDraining (and session.ErrClosed); calls already running keep their
// session and finish normally, reconnecting if they must. Drain returns nil
// once nothing is in flight, or ctx.Err() when ctx ends first; either way
// the gateway stays draining. It does not end the session: the owner calls
// Close afterwards, which ends the child process.
//
// Discovery calls Drain with a grace period, then Close, when a server is
// removed from mcp.json or replaced by a changed one. Drain is safe to call
// concurrently and more than once; after Close it returns nil at once.
func (g *Gateway) Drain(ctx context.Context) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	first := !g.draining
	g.draining = true
	inflight := g.inflight
	var done chan struct{}
	if inflight > 0 {
		if g.drained == nil {
			g.drained = make(chan struct{})
		}
		done = g.drained
	}
	g.mu.Unlock()
	if first {
		g.logger.Info("gateway draining", "in_flight", inflight)
	}
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// enter admits one public call (Run, Execute, List) and counts it as in
// flight; the caller must call leave when it returns. After Close or during
// Drain it admits nothing and says why.
func (g *Gateway) enter(op string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.closed:
		return g.serverErr(op, session.ErrClosed)
	case g.draining:
		return g.serverErr(op, errDraining)
	}
	g.inflight++
	return nil
}

// leave ends a call admitted by enter and wakes Drain when it was the last.
func (g *Gateway) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inflight--
	if g.inflight == 0 && g.drained != nil {
		close(g.drained)
		g.drained = nil
	}
}

// InFlight returns how many calls the gateway has admitted and not yet
// ended: what a Drain waits for.
func (g *Gateway) InFlight() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inflight
}
