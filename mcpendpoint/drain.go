package mcpendpoint

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/elysia-go/elysia/mcpendpoint/internal/jsonrpc"
	"github.com/elysia-go/elysia/mcpendpoint/internal/sse"
)

// Shutdown of a replica (Drain, WaitCalls, StopCalls). The service stops
// in a grace period; the endpoint's part in it is to let the calls it runs
// finish within it and their answers reach their clients, and to cancel
// only what still runs when it ends. Drain closes at once what would only
// hold the HTTP server's Shutdown: the GET streams that listen for the
// server's messages, and the streams of calls that other replicas run
// (mirrors), whose clients resume them on a replica that stays. The
// sessions stay, here and in the SessionStore, and so do the calls'
// streams: a client whose connection dropped resumes its call's stream on
// another replica, which reads it from here through the Relay. WaitCalls
// waits for every call to end and every call stream's answer to be handed
// to a client (written to its connection, or sent to the replica that
// serves its resume); StopCalls, when the grace is nearly over, cancels
// the calls still running, upstream too, and each client gets a JSON-RPC
// error that says the service stopped before its call finished.

// errServiceStopped is the error a call cancelled by StopCalls answers.
var errServiceStopped = errors.New("the service stopped before the call finished: call the tool again")

// drainRetryAfter is the Retry-After of a 503 for a request that a
// draining replica sends elsewhere.
const drainRetryAfter = time.Second

// drainState is what a shutdown needs of the endpoint's work: the calls
// running, the call streams whose answer no client has had, and the
// streams to close when draining starts. Its zero value is ready; its
// methods are safe for concurrent use.
type drainState struct {
	// mu guards draining, stopped, calls, listens, pending, byStream,
	// changed and every pendingAnswer's id and over.
	mu       sync.Mutex
	draining bool
	// stopped is set by StopCalls: a call that starts after it is
	// cancelled at once.
	stopped bool
	// calls are the cancels of the calls running (route).
	calls map[*context.CancelCauseFunc]struct{}
	// listens are the cancels of the GET streams open (not resumes).
	listens map[*context.CancelFunc]struct{}
	// pending are the answers of the call streams not yet handed to a
	// client; byStream finds them by stream id.
	pending  map[*pendingAnswer]struct{}
	byStream map[string]*pendingAnswer
	// changed is closed (and replaced) when a call ends or an answer is
	// handed over.
	changed chan struct{}
}

// pendingAnswer is the answer of one call stream until a client has it,
// or the stream is forgotten and nobody can.
type pendingAnswer struct {
	d    *drainState
	id   string // the stream's, once it is open
	over bool
}

// signalLocked wakes WaitCalls; d.mu must be held.
func (d *drainState) signalLocked() {
	if d.changed != nil {
		close(d.changed)
		d.changed = nil
	}
}

// call registers a running call and returns its ctx, cancelled with
// errServiceStopped by StopCalls, and the func that unregisters it.
func (d *drainState) call(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	key := &cancel
	d.mu.Lock()
	if d.stopped {
		cancel(errServiceStopped)
	} else {
		if d.calls == nil {
			d.calls = map[*context.CancelCauseFunc]struct{}{}
		}
		d.calls[key] = struct{}{}
	}
	d.mu.Unlock()
	return ctx, func() {
		d.mu.Lock()
		delete(d.calls, key)
		d.signalLocked()
		d.mu.Unlock()
		cancel(nil)
	}
}

// listen registers a GET stream and returns its ctx, which Drain cancels,
// and the func that unregisters it; ok is false when draining has begun:
// the stream should not open.
func (d *drainState) listen(ctx context.Context) (_ context.Context, done func(), ok bool) {
	ctx, cancel := context.WithCancel(ctx)
	key := &cancel
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.draining {
		cancel()
		return ctx, func() {}, false
	}
	if d.listens == nil {
		d.listens = map[*context.CancelFunc]struct{}{}
	}
	d.listens[key] = struct{}{}
	return ctx, func() {
		d.mu.Lock()
		delete(d.listens, key)
		d.mu.Unlock()
		cancel()
	}, true
}

// open records the pending answer of a call stream about to open; the
// stream's forgetting must settle it, and stream names it once open.
func (d *drainState) open() *pendingAnswer {
	p := &pendingAnswer{d: d}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending == nil {
		d.pending, d.byStream = map[*pendingAnswer]struct{}{}, map[string]*pendingAnswer{}
	}
	d.pending[p] = struct{}{}
	return p
}

// stream names p's stream, so that answered finds it; nothing when p is
// settled already.
func (p *pendingAnswer) stream(id string) {
	d := p.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if !p.over {
		p.id = id
		d.byStream[id] = p
	}
}

// settle records that p's answer was handed to a client, or can no longer
// be. It may be called more than once.
func (p *pendingAnswer) settle() {
	d := p.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if p.over {
		return
	}
	p.over = true
	delete(d.pending, p)
	if p.id != "" {
		delete(d.byStream, p.id)
	}
	d.signalLocked()
}

// answered settles the pending answer of stream id, if there is one.
func (d *drainState) answered(id string) {
	d.mu.Lock()
	p := d.byStream[id]
	d.mu.Unlock()
	if p != nil {
		p.settle()
	}
}

// isDraining reports whether Drain was called.
func (d *drainState) isDraining() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.draining
}

// wait waits until no call runs and no answer is pending, or ctx ends,
// and reports whether it got there.
func (d *drainState) wait(ctx context.Context) bool {
	for {
		d.mu.Lock()
		if len(d.calls) == 0 && len(d.pending) == 0 {
			d.mu.Unlock()
			return true
		}
		if d.changed == nil {
			d.changed = make(chan struct{})
		}
		c := d.changed
		d.mu.Unlock()
		select {
		case <-c:
		case <-ctx.Done():
			return false
		}
	}
}

// Drain starts the endpoint's part in a shutdown of the service (see
// above): the GET streams open close at once, and a new one is answered
// 503 with Retry-After, so that neither holds the HTTP server's
// Shutdown; so do the streams of calls that other replicas run read here,
// whose clients resume them elsewhere. Calls go on, new ones too, and the
// sessions stay, here and in the SessionStore. It returns at once and may
// be called more than once.
func (e *Endpoint) Drain() {
	d := &e.drain
	d.mu.Lock()
	d.draining = true
	listens := make([]context.CancelFunc, 0, len(d.listens))
	for c := range d.listens {
		listens = append(listens, *c)
	}
	d.mu.Unlock()
	for _, cancel := range listens {
		cancel()
	}
	e.relayed.endMirrors()
}

// WaitCalls waits, after Drain, until no call runs here and the answer of
// every call stream held here was handed to a client (written to its
// connection, or sent to the replica where it resumed the stream), or
// until ctx ends; it reports whether it got there.
func (e *Endpoint) WaitCalls(ctx context.Context) bool {
	return e.drain.wait(ctx)
}

// StopCalls ends the calls still running, when the grace of a shutdown is
// nearly over: each is cancelled, upstream too, and answers its client a
// JSON-RPC error saying that the service stopped before it finished (a
// call started from now on answers so at once). It then waits, within ctx,
// for those answers to reach the clients (WaitCalls), and closes the
// legacy SSE streams, on which alone their sessions' answers could come.
// It reports whether every answer was handed over.
func (e *Endpoint) StopCalls(ctx context.Context) bool {
	d := &e.drain
	d.mu.Lock()
	d.draining, d.stopped = true, true
	calls := make([]context.CancelCauseFunc, 0, len(d.calls))
	for c := range d.calls {
		calls = append(calls, *c)
	}
	d.mu.Unlock()
	for _, cancel := range calls {
		cancel(errServiceStopped)
	}
	ok := d.wait(ctx)
	e.sse.CloseSessions()
	return ok
}

// writeDraining answers w 503 with Retry-After: this replica is shutting
// down, another serves the request.
func writeDraining(w http.ResponseWriter, msg string) {
	writeUnavailable(w, drainRetryAfter, msg)
}

// answerWriter is the http.ResponseWriter of a call stream's reader here:
// once a write that carries the call's answer succeeded, the answer is
// handed over (drainState.answered).
type answerWriter struct {
	http.ResponseWriter
	d  *drainState
	id string
}

func (w *answerWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	if err == nil && framesResponse(b) {
		w.d.answered(w.id)
	}
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *answerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// framesResponse reports whether b, SSE events as a call stream writes
// them, carries a JSON-RPC response: the only one a call's stream carries
// is its answer.
func framesResponse(b []byte) bool {
	if !bytes.Contains(b, []byte(`"result"`)) && !bytes.Contains(b, []byte(`"error"`)) {
		return false // the cheap test: progress and log messages
	}
	for {
		ev, _, rest, ok := sse.Next(b)
		if !ok {
			return false
		}
		b = rest
		if jsonrpc.IsResponse(ev.Data) {
			return true
		}
	}
}
