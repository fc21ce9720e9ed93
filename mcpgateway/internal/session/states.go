package session

import "time"

// stateChanged tells the StateObserver, if any, that c's state may have
// changed. It never blocks, and must be called without mu held, after the
// change: it starts feedStates on first use and wakes it.
func (c *Conn) stateChanged() {
	if c.opts.States == nil {
		return
	}
	c.mu.Lock()
	if !c.feeding && !c.closed { // closed: wg may be waited on already
		c.feeding = true
		c.goFunc(c.feedStates)
	}
	c.mu.Unlock()
	select {
	case c.stateWake <- struct{}{}:
	default: // a wake is pending; feedStates will read the state after this change
	}
}

// feedStates passes c's state to the StateObserver whenever it differs from
// the last one passed: after each wake, and when a back-off runs out, which
// changes the state Status reports (failed becomes idle) with no event to
// wake it, so a timer it owns marks it. Being the only caller of
// ObserveState for c, it keeps the calls in order, and it calls the observer
// without holding mu. It is started by stateChanged, owned by wg, and ends
// with close, stopping its timer.
func (c *Conn) feedStates() {
	var last State // none yet: the first wake follows a change
	backoff := time.NewTimer(time.Hour)
	backoff.Stop()
	defer backoff.Stop()
	for {
		select {
		case <-c.lifetime.Done():
			return
		case <-c.stateWake:
		case <-backoff.C:
		}
		st := c.Status()
		if st.State == StateClosed {
			return
		}
		if st.RetryAt.IsZero() {
			backoff.Stop()
		} else {
			backoff.Reset(time.Until(st.RetryAt))
		}
		if st.State != last {
			last = st.State
			c.opts.States.ObserveState(c.cfg.Name, st.State)
		}
	}
}
