package web

import (
	"context"
	"fmt"
	"sync"

	"github.com/coder/websocket"
)

// goingAwayReason is the reason of the close frame Drain sends every
// WebSocket (status 1001, going away).
const goingAwayReason = "the service is shutting down"

// drainer knows the queries running and the WebSockets open on a Server,
// so that Drain can tell them all that the service is stopping.
type drainer struct {
	// mu guards draining, next, runs, sockets and idle.
	mu       sync.Mutex
	draining bool
	next     uint64
	// runs holds the cancel func of each query running, sockets each open
	// WebSocket's, by a number of their own.
	runs    map[uint64]func()
	sockets map[uint64]socketCloser
	// idle is closed when no socket is open any more once draining.
	idle chan struct{}
}

// socketCloser is how Drain closes one WebSocket: goAway asks it to close
// with status 1001 once its queries have sent their last events; now
// closes it at once, without the handshake. Both must be safe to call from
// any goroutine, at any time.
type socketCloser struct{ goAway, now func() }

// trackRun registers the cancel func of a running query; the returned
// func unregisters it. A query
// that starts once the server drains is cancelled at once.
func (d *drainer) trackRun(cancel func()) (untrack func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.draining {
		cancel()
		return func() {}
	}
	if d.runs == nil {
		d.runs = map[uint64]func(){}
	}
	d.next++
	id := d.next
	d.runs[id] = cancel
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		delete(d.runs, id)
	}
}

// trackSocket registers an open WebSocket; its handler calls the returned
// func when the socket has ended. A socket opened once the server drains
// is asked to go away at once.
func (d *drainer) trackSocket(c socketCloser) (untrack func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.draining {
		c.goAway()
		return func() {}
	}
	if d.sockets == nil {
		d.sockets = map[uint64]socketCloser{}
	}
	d.next++
	id := d.next
	d.sockets[id] = c
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		delete(d.sockets, id)
		if d.draining && len(d.sockets) == 0 && d.idle != nil {
			close(d.idle)
			d.idle = nil
		}
	}
}

// Drain tells every open stream that the service is stopping, for a
// graceful shutdown: every running query is cancelled, and its stream
// sends an error event saying that the service is shutting down, then
// completed; every WebSocket then gets a close frame with status 1001
// (going away), once its queries' last events are written. Queries and
// sockets that start later get the same at once. Drain returns when every
// socket has closed, or when ctx ends, after closing the sockets still
// open without the handshake (a peer that does not answer the close
// frame). An SSE stream ends once its last event is written; the
// http.Server's Shutdown waits for it.
//
// Call it once the queries have had their time to finish (see the
// shutdown in cmd/elysia). It is safe to call more than once, and
// concurrently; the server serves nothing but refusals afterwards.
func (s *Server) Drain(ctx context.Context) error {
	d := &s.drain
	d.mu.Lock()
	d.draining = true
	runs := make([]func(), 0, len(d.runs))
	for _, cancel := range d.runs {
		runs = append(runs, cancel)
	}
	sockets := d.openSockets()
	if d.idle == nil && len(sockets) > 0 {
		d.idle = make(chan struct{})
	}
	idle := d.idle
	d.mu.Unlock()
	for _, cancel := range runs {
		cancel()
	}
	for _, c := range sockets {
		c.goAway()
	}
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		d.mu.Lock()
		sockets = d.openSockets()
		d.mu.Unlock()
		for _, c := range sockets {
			c.now()
		}
		return fmt.Errorf("drain: %d websockets did not close in time: %w", len(sockets), context.Cause(ctx))
	}
}

// openSockets returns the sockets open; d.mu must be held.
func (d *drainer) openSockets() []socketCloser {
	out := make([]socketCloser, 0, len(d.sockets))
	for _, c := range d.sockets {
		out = append(out, c)
	}
	return out
}

// closeOnDrain is the socketCloser of a socket that runs no queries: going
// away closes it with status 1001 on a goroutine of its own (the handshake
// waits for the peer, bounded by the library), which ends when the close
// does; the handler's read then fails and the handler ends.
func closeOnDrain(conn *websocket.Conn) socketCloser {
	var once sync.Once
	return socketCloser{
		goAway: func() {
			once.Do(func() {
				go func() { _ = conn.Close(websocket.StatusGoingAway, goingAwayReason) }() // the peer may be gone; the socket ends either way
			})
		},
		now: func() { _ = conn.CloseNow() },
	}
}
