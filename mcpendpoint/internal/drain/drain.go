// Package drain keeps what the shutdown of a replica of the MCP endpoint
// waits for and ends: the calls running, the answers of call streams that
// no client has had yet, and the listening streams that draining closes.
package drain

import (
	"context"
	"sync"
	"time"
)

// RetryAfter is the Retry-After of a 503 for a request that a draining
// replica sends elsewhere.
const RetryAfter = time.Second

// State is what a shutdown needs of the endpoint's work: the calls
// running, the call streams whose answer no client has had, and the
// streams to close when draining starts. Its zero value is ready; its
// methods are safe for concurrent use.
type State struct {
	// mu guards draining, stopped, calls, listens, pending, byStream,
	// changed and every Pending's id and over.
	mu       sync.Mutex
	draining bool
	// stopped is the cause given to Stop, once it is called: a call that
	// starts after it is cancelled with it at once.
	stopped error
	// calls are the cancels of the calls running (Call).
	calls map[*context.CancelCauseFunc]struct{}
	// listens are the cancels of the streams open (Listen).
	listens map[*context.CancelFunc]struct{}
	// pending are the answers of the call streams not yet handed to a
	// client; byStream finds them by stream id.
	pending  map[*Pending]struct{}
	byStream map[string]*Pending
	// changed is closed (and replaced) when a call ends or an answer is
	// handed over.
	changed chan struct{}
}

// Pending is the answer of one call stream until a client has it, or the
// stream is forgotten and nobody can.
type Pending struct {
	d    *State
	id   string // the stream's, once it is open
	over bool
}

// signalLocked wakes Wait; d.mu must be held.
func (d *State) signalLocked() {
	if d.changed != nil {
		close(d.changed)
		d.changed = nil
	}
}

// Call registers a running call and returns its ctx, cancelled with the
// cause given to Stop, and the func that unregisters it.
func (d *State) Call(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	key := &cancel
	d.mu.Lock()
	if d.stopped != nil {
		cancel(d.stopped)
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

// Listen registers a stream that listens for the server's messages and
// returns its ctx, which Drain cancels, and the func that unregisters it;
// ok is false when draining has begun: the stream should not open.
func (d *State) Listen(ctx context.Context) (_ context.Context, done func(), ok bool) {
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

// Open records the pending answer of a call stream about to open; the
// stream's forgetting must settle it, and Stream names it once open.
func (d *State) Open() *Pending {
	p := &Pending{d: d}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending == nil {
		d.pending, d.byStream = map[*Pending]struct{}{}, map[string]*Pending{}
	}
	d.pending[p] = struct{}{}
	return p
}

// Stream names p's stream, so that Answered finds it; nothing when p is
// settled already.
func (p *Pending) Stream(id string) {
	d := p.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if !p.over {
		p.id = id
		d.byStream[id] = p
	}
}

// Settle records that p's answer was handed to a client, or can no longer
// be. It may be called more than once.
func (p *Pending) Settle() {
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

// Answered settles the pending answer of stream id, if there is one.
func (d *State) Answered(id string) {
	d.mu.Lock()
	p := d.byStream[id]
	d.mu.Unlock()
	if p != nil {
		p.Settle()
	}
}

// Draining reports whether Drain or Stop was called.
func (d *State) Draining() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.draining
}

// Wait waits until no call runs and no answer is pending, or ctx ends,
// and reports whether it got there.
func (d *State) Wait(ctx context.Context) bool {
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

// Drain starts draining: the streams open (Listen) are cancelled, and a
// new one is refused. Calls go on, new ones too. It may be called more
// than once.
func (d *State) Drain() {
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
}

// Stop ends the calls: those running are cancelled with cause
// (context.Canceled if nil), and so is every call that starts from now on.
// Draining begins too, though the streams open (Listen) are left to
// Drain.
func (d *State) Stop(cause error) {
	if cause == nil {
		cause = context.Canceled
	}
	d.mu.Lock()
	d.draining, d.stopped = true, cause
	calls := make([]context.CancelCauseFunc, 0, len(d.calls))
	for c := range d.calls {
		calls = append(calls, *c)
	}
	d.mu.Unlock()
	for _, cancel := range calls {
		cancel(cause)
	}
}
