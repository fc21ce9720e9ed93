package drain

import (
	"context"
	"errors"
	"testing"
	"time"
)

// waitShort is Wait bounded by a short while, for a State that should
// not get there.
func waitShort(d *State) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	return d.Wait(ctx)
}

func TestWaitForCalls(t *testing.T) {
	var d State
	if !d.Wait(t.Context()) {
		t.Fatal("Wait with nothing running: false")
	}
	ctx, done := d.Call(t.Context())
	if waitShort(&d) {
		t.Fatal("Wait returned with a call running")
	}
	got := make(chan bool)
	go func() { got <- d.Wait(t.Context()) }()
	done()
	if !<-got {
		t.Error("Wait after the call ended: false")
	}
	if ctx.Err() == nil {
		t.Error("the call's ctx is not cancelled once it ended")
	}
}

func TestWaitForAnswers(t *testing.T) {
	var d State
	p := d.Open()
	if waitShort(&d) {
		t.Fatal("Wait returned with an answer pending")
	}
	d.Answered("s-1") // not named yet: nothing
	if waitShort(&d) {
		t.Fatal("Wait returned after another stream's answer")
	}
	p.Stream("s-1")
	d.Answered("s-1")
	if !d.Wait(t.Context()) {
		t.Error("Wait after the answer was handed over: false")
	}
	p.Settle() // again: nothing

	q := d.Open()
	q.Settle() // forgotten before it opened
	q.Stream("s-2")
	if !d.Wait(t.Context()) {
		t.Error("Wait after the pending answer was settled: false")
	}
	if len(d.byStream) != 0 {
		t.Errorf("%d streams still named after their answers settled", len(d.byStream))
	}
}

func TestDrainClosesListens(t *testing.T) {
	var d State
	ctx, done, ok := d.Listen(t.Context())
	defer done()
	if !ok || d.Draining() {
		t.Fatalf("Listen before Drain: ok %v, Draining %v; want true, false", ok, d.Draining())
	}
	call, end := d.Call(t.Context())
	defer end()
	d.Drain()
	d.Drain()
	if ctx.Err() == nil {
		t.Error("Drain left the stream open")
	}
	if call.Err() != nil {
		t.Error("Drain cancelled a call")
	}
	if !d.Draining() {
		t.Error("Draining after Drain: false")
	}
	late, _, ok := d.Listen(t.Context())
	if ok || late.Err() == nil {
		t.Errorf("Listen after Drain: ok %v, ctx %v; want false, cancelled", ok, late.Err())
	}
}

func TestStopCancelsCalls(t *testing.T) {
	var d State
	stopped := errors.New("stopped")
	listen, done, _ := d.Listen(t.Context())
	defer done()
	ctx, end := d.Call(t.Context())
	defer end()
	d.Stop(stopped)
	if err := context.Cause(ctx); !errors.Is(err, stopped) {
		t.Errorf("a running call's cause: %v, want %v", err, stopped)
	}
	late, lateEnd := d.Call(t.Context())
	defer lateEnd()
	if err := context.Cause(late); !errors.Is(err, stopped) {
		t.Errorf("a call started after Stop: cause %v, want %v", err, stopped)
	}
	if !d.Draining() || listen.Err() != nil {
		t.Errorf("after Stop: Draining %v, stream's ctx %v; want true, open", d.Draining(), listen.Err())
	}
}
