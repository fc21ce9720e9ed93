package mcpgateway

import (
	"context"
	"time"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
)

// startProber starts the prober of the copies that are down unless it
// runs.
func (g *Gateway) startProber() {
	g.mu.Lock()
	if !g.probing && !g.closed {
		g.probing = true
		g.wg.Go(g.probeCopies)
	}
	g.mu.Unlock()
}

// downFromStart marks down the copies whose stdio command cannot start,
// as found when their session owners were made (New does no I/O and
// starts no goroutine: the first call starts the prober, see order).
func (g *Gateway) downFromStart() {
	if !g.multi() {
		return
	}
	now := time.Now()
	for _, c := range g.copies {
		st := g.shared.conns[c.index].Status()
		if st.State != session.StateFailed || st.LastErr == "" {
			continue
		}
		c.mu.Lock()
		c.down, c.downErr, c.downSince, c.backoff, c.probeAt = true, trimServer(g, st.LastErr), now, g.opts.CopyProbe, now.Add(g.opts.CopyProbe)
		c.mu.Unlock()
		g.proberDue.Store(true)
	}
}

// probeCopies checks the copies that are down, each when its probeAt comes,
// until none is down or the gateway closes. On a server with a session per
// user there is no shared session to check with: a copy is let back when
// its probe time comes, and the next call is the check.
func (g *Gateway) probeCopies() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		next, due := g.dueCopies(time.Now())
		for _, c := range due {
			g.probe(c)
		}
		if len(due) > 0 {
			continue
		}
		if next.IsZero() {
			g.mu.Lock()
			// A copy marked down meanwhile finds probing still set
			// and relies on this loop: look again under g.mu.
			if n, d := g.dueCopies(time.Now()); n.IsZero() && len(d) == 0 {
				g.probing = false
				g.mu.Unlock()
				return
			}
			g.mu.Unlock()
			continue
		}
		t.Reset(time.Until(next))
		select {
		case <-g.stopProbe:
			return
		case <-t.C:
		}
	}
}

// dueCopies returns the copies down whose probe time has come, and the
// earliest probe time of the others (zero when none is down).
func (g *Gateway) dueCopies(now time.Time) (next time.Time, due []*copyState) {
	for _, c := range g.copies {
		c.mu.Lock()
		switch {
		case !c.down:
		case !now.Before(c.probeAt):
			due = append(due, c)
		case next.IsZero() || c.probeAt.Before(next):
			next = c.probeAt
		}
		c.mu.Unlock()
	}
	return next, due
}

// probe checks one copy that is down: up when it answers, else checked
// again after a longer wait.
func (g *Gateway) probe(c *copyState) {
	var err error
	if !g.perUser.Load() {
		// Bounded by the connect timeout, and ended by Close with the
		// session owner it pings.
		conn := g.shared.conns[c.index]
		timeout, _ := c.cfg.Timeouts()
		ctx, cancel := context.WithTimeout(conn.Lifetime(), timeout)
		err = conn.Ping(ctx)
		cancel()
	}
	select {
	case <-g.stopProbe:
		return
	default:
	}
	if err == nil {
		g.markUp(c)
		return
	}
	c.mu.Lock()
	c.downErr = g.mask(trimServer(g, err.Error()))
	c.backoff = min(2*c.backoff, g.opts.CircuitOpenFor)
	c.probeAt = time.Now().Add(c.backoff)
	c.mu.Unlock()
}
