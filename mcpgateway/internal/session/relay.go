package session

import (
	"sync"
	"time"

	"github.com/elysia-go/elysia/tools"
)

// Caps on what a server sends during one call (DESIGN.md, "Server-initiated
// messages"). The server decides how many messages it sends; these bound
// what reaches the user of the call, and so what their query saves.
const (
	// MaxElicitationsPerCall is how many questions (elicitation/create)
	// one call's server may put to the user: later ones are declined at
	// once, the reason in the answer's _meta, and the user gets one
	// warning. tree.MaxPendingQuestions bounds a user's waiting questions
	// across calls.
	MaxElicitationsPerCall = 10
	// ProgressInterval is the least time between two progress events of one
	// call on the user's stream: reports in between are coalesced into the
	// latest, and the call's last report is always delivered before its
	// result.
	ProgressInterval = 100 * time.Millisecond
)

// relay carries the messages a server sends during one call (progress,
// warnings) from the transport's read loop to the user's emitter. The read
// loop is shared by every user of the server and must never wait for one
// user's stream, while an emitter may block (a stream that is not read): so
// senders only store the message and wake the relay's goroutine, which
// emits. Progress waits in a few slots (one for a person's stream, where
// a newer report replaces the one waiting; PacedBurst for a
// ProgressPacer, the last slot taking the newest), emitted at most once
// per pace; warnings queue, their number bounded by the senders
// (maxCallWarnings, one per cap). The call that starts a relay owns its
// goroutine and ends it with close. The goroutine starts with the call's
// first message: most calls send none, and then have none.
type relay struct {
	emit  tools.Emitter
	pace  time.Duration // ProgressInterval, or the emitter's (ProgressPacer)
	burst int           // how many reports wait at most (paceOf)
	wake  chan struct{} // buffer of one: a value waiting means "look again"
	stop  chan struct{} // closed by close, once the goroutine runs
	done  chan struct{} // closed when the goroutine has returned; nil until it starts

	// mu guards pending, queue and closed, and the three channels until
	// the goroutine starts (they are set then, once).
	mu      sync.Mutex
	pending []tools.ProgressPayload // reports not yet emitted, oldest first
	queue   []tools.Event           // events not yet emitted, in order
	closed  bool                    // close has begun: nothing starts it
}

// newRelay returns the relay of a call whose messages go to emit.
func newRelay(emit tools.Emitter) *relay {
	pace, burst := paceOf(emit)
	return &relay{emit: emit, pace: pace, burst: burst}
}

// progress stores p among the call's reports to emit; with every slot
// taken it replaces the newest. It never blocks.
func (r *relay) progress(p tools.ProgressPayload) {
	r.mu.Lock()
	if len(r.pending) < r.burst {
		r.pending = append(r.pending, p)
	} else {
		r.pending[len(r.pending)-1] = p
	}
	r.pokeLocked()
	r.mu.Unlock()
}

// event queues ev to be emitted. It never blocks; the caller bounds how
// many events it queues.
func (r *relay) event(ev tools.Event) {
	r.mu.Lock()
	r.queue = append(r.queue, ev)
	r.pokeLocked()
	r.mu.Unlock()
}

// pokeLocked wakes the goroutine, starting it for the first message unless
// close has begun (what comes after the call's end is dropped, as it
// always was); r.mu is held. It never blocks.
func (r *relay) pokeLocked() {
	if r.done == nil {
		if r.closed {
			return
		}
		r.wake, r.stop, r.done = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
		go r.run()
	}
	select {
	case r.wake <- struct{}{}:
	default: // a wake is waiting already
	}
}

// close emits what is still waiting (the last report among it) and ends
// the goroutine. It waits for the emitter, which is the calling user's own
// stream, never a shared one.
func (r *relay) close() {
	r.mu.Lock()
	r.closed = true
	running := r.done != nil
	r.mu.Unlock()
	if running {
		close(r.stop)
		<-r.done
	}
}

func (r *relay) run() {
	defer close(r.done)
	pace := time.NewTimer(r.pace)
	pace.Stop()
	defer pace.Stop()
	for {
		select {
		case <-r.wake:
		case <-r.stop:
			r.flush()
			return
		}
		r.flush()
		// The next report waits until the pace after this one; the ones
		// that come meanwhile replace each other.
		pace.Reset(r.pace)
		select {
		case <-pace.C:
		case <-r.stop:
			r.flush()
			return
		}
	}
}

// flush emits the queued events, then the reports waiting.
func (r *relay) flush() {
	r.mu.Lock()
	queue, pending := r.queue, r.pending
	r.queue, r.pending = nil, nil
	r.mu.Unlock()
	for _, ev := range queue {
		r.emit.Emit(ev)
	}
	for _, p := range pending {
		r.emit.Emit(tools.Event{Type: tools.EventStatus, Payload: p})
	}
}
