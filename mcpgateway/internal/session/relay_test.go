package session

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/elysia-go/elysia/tools"
)

// TestRelayPacesProgress drives a call's relay on a fake clock: a report
// every millisecond for 5 s reaches the emitter at most once per
// ProgressInterval, in order, ending with the last report.
func TestRelayPacesProgress(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		u := &recorder{}
		r := newRelay(u)
		const n = 5000
		for i := 1; i <= n; i++ {
			r.progress(tools.ProgressPayload{Progress: float64(i)})
			time.Sleep(time.Millisecond)
		}
		r.close()
		ps := u.progress()
		if max := int(n*time.Millisecond/ProgressInterval) + 2; len(ps) > max {
			t.Errorf("%d progress events in %v, want at most %d", len(ps), n*time.Millisecond, max)
		}
		if len(ps) < 40 {
			t.Errorf("%d progress events in %v, want about one per %v", len(ps), n*time.Millisecond, ProgressInterval)
		}
		for i := 1; i < len(ps); i++ {
			if ps[i].Progress <= ps[i-1].Progress {
				t.Fatalf("progress %d = %v after %v: out of order", i, ps[i].Progress, ps[i-1].Progress)
			}
		}
		if ps[len(ps)-1].Progress != n {
			t.Errorf("the last progress event is %v, want %d", ps[len(ps)-1].Progress, n)
		}
	})
}

// TestRelayNeverBlocksItsSender: with the emitter stuck, reports and
// warnings are taken at once; once it is free the warnings and the latest
// report arrive.
func TestRelayNeverBlocksItsSender(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		u := &stalledStream{release: release, entered: make(chan struct{})}
		r := newRelay(u)
		r.progress(tools.ProgressPayload{Progress: 1})
		<-u.entered
		for i := 2; i <= 1000; i++ {
			r.progress(tools.ProgressPayload{Progress: float64(i)})
		}
		r.event(tools.NewWarning("careful"))
		synctest.Wait() // every sender returned with the emitter still stuck
		close(release)
		r.close()
		ps := u.progress()
		if len(ps) != 2 || ps[1].Progress != 1000 {
			t.Errorf("progress %+v, want 1 then 1000", ps)
		}
		if len(u.events) != 3 || u.events[1].Type != tools.EventWarning {
			t.Errorf("events %+v, want the warning between the two reports", u.events)
		}
	})
}

// recorder is a user's stream that records the events it gets.
type recorder struct {
	mu     sync.Mutex
	events []tools.Event
}

func (r *recorder) Emit(ev tools.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

// progress returns the progress reports among the events.
func (r *recorder) progress() []tools.ProgressPayload {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []tools.ProgressPayload
	for _, ev := range r.events {
		if p, ok := ev.Payload.(tools.ProgressPayload); ok {
			out = append(out, p)
		}
	}
	return out
}

// stalledStream is the stream of a user who never reads: its first
// progress event blocks until release is closed; it records every event.
type stalledStream struct {
	release <-chan struct{}
	entered chan struct{} // closed at the first progress event
	once    sync.Once
	recorder
}

func (s *stalledStream) Emit(ev tools.Event) {
	if _, ok := ev.Payload.(tools.ProgressPayload); ok {
		s.once.Do(func() { close(s.entered) })
		<-s.release
	}
	s.recorder.Emit(ev)
}

// pacedRecorder is a recorder that takes progress at pace, as the
// aggregate endpoint's emitter does (ProgressPacer).
type pacedRecorder struct {
	recorder
	pace time.Duration
}

func (p *pacedRecorder) ProgressPace() time.Duration { return p.pace }

// TestRelayPassesBurstsToAPacer: for an emitter that counts reports
// (ProgressPacer), three reports sent within one pace all arrive, in
// order; a flood still reaches it at most PacedBurst times per pace,
// ending with the last report.
func TestRelayPassesBurstsToAPacer(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		u := &pacedRecorder{pace: 10 * time.Millisecond}
		r := newRelay(u)
		for i := 1; i <= 3; i++ {
			r.progress(tools.ProgressPayload{Progress: float64(i)})
			time.Sleep(time.Millisecond)
		}
		synctest.Wait()
		time.Sleep(50 * time.Millisecond) // past the pace, on the fake clock
		if ps := u.progress(); len(ps) != 3 || ps[0].Progress != 1 || ps[2].Progress != 3 {
			t.Errorf("a burst of three: %v, want 1, 2, 3", ps)
		}

		const n = 2000
		for i := 4; i < 4+n; i++ {
			r.progress(tools.ProgressPayload{Progress: float64(i)})
			time.Sleep(100 * time.Microsecond)
		}
		r.close()
		ps := u.progress()
		if max := 3 + PacedBurst*(int(n*100*time.Microsecond/u.pace)+2); len(ps) > max {
			t.Errorf("%d progress events for a flood of %d in %v, want at most %d", len(ps), n, n*100*time.Microsecond, max)
		}
		for i := 1; i < len(ps); i++ {
			if ps[i].Progress <= ps[i-1].Progress {
				t.Fatalf("progress %d = %v after %v: out of order", i, ps[i].Progress, ps[i-1].Progress)
			}
		}
		if ps[len(ps)-1].Progress != 3+n {
			t.Errorf("the last progress event is %v, want %d", ps[len(ps)-1].Progress, 3+n)
		}
	})
}

// TestRelayStartsWithTheFirstMessage: a call whose server sends nothing
// has no relay goroutine; one message starts it, and it is emitted before
// close returns; what comes after close is dropped, starting nothing.
func TestRelayStartsWithTheFirstMessage(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		quiet := newRelay(&recorder{})
		quiet.close()
		if quiet.done != nil {
			t.Error("a call without messages started the relay's goroutine")
		}

		u := &recorder{}
		r := newRelay(u)
		r.event(tools.Event{Type: tools.EventWarning, Payload: "careful"})
		r.close()
		if len(u.events) != 1 || u.events[0].Payload != "careful" {
			t.Errorf("emitted %v, want the one warning before close returned", u.events)
		}

		late := newRelay(u)
		late.close()
		late.progress(tools.ProgressPayload{Progress: 1})
		late.event(tools.Event{Type: tools.EventWarning, Payload: "late"})
		synctest.Wait()
		if late.done != nil || len(u.events) != 1 {
			t.Errorf("messages after close: running %t, emitted %v; want them dropped", late.done != nil, u.events)
		}
	})
}
