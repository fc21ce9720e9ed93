package main

import (
	"context"
	"sync"
)

// runTracker counts the queries in flight so that shutdown can wait for
// them: WebSocket connections are hijacked, so http.Server.Shutdown does not
// wait for their queries. After close, new queries are refused.
type runTracker struct {
	// mu guards n, closed and idle.
	mu     sync.Mutex
	n      int
	closed bool
	idle   chan struct{} // closed when n drops to 0 after close
}

// Begin registers a query; false means the service is shutting down.
func (t *runTracker) Begin() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.n++
	return true
}

// End unregisters a query begun with Begin.
func (t *runTracker) End() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.closed && t.n == 0 && t.idle != nil {
		close(t.idle)
		t.idle = nil
	}
}

// closeAndWait refuses new queries and waits until the running ones end or
// ctx does; it reports whether they all ended.
func (t *runTracker) closeAndWait(ctx context.Context) bool {
	t.mu.Lock()
	t.closed = true
	if t.n == 0 {
		t.mu.Unlock()
		return true
	}
	if t.idle == nil {
		t.idle = make(chan struct{})
	}
	idle := t.idle
	t.mu.Unlock()
	select {
	case <-idle:
		return true
	case <-ctx.Done():
		return false
	}
}
