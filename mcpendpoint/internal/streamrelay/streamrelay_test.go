package streamrelay

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elysia-go/elysia/mcpendpoint/internal/callstream"
)

func newMirror(t *testing.T, tb *Table, id string) (string, *Mirror) {
	t.Helper()
	return tb.Add(callstream.NewMirror(strings.Repeat(id, callstream.IDLen), "s", "u", 0))
}

// ended reports whether st is gone: a reader of it is no longer current.
func ended(st *callstream.Stream) bool {
	_, _, _, current, _ := st.Since(0, st.Take())
	return !current
}

// TestMirrors: a mirror is found by its reader and its stream's id only,
// until it is removed; readers are distinct.
func TestMirrors(t *testing.T) {
	var tb Table
	ra, a := newMirror(t, &tb, "a")
	rb, _ := newMirror(t, &tb, "b")
	if ra == rb || len(ra) != 16 {
		t.Fatalf("readers %q and %q: want two distinct 16-digit ids", ra, rb)
	}
	if got := tb.Mirror(ra, a.Stream().ID()); got != a {
		t.Errorf("Mirror(reader, stream) = %p, want %p", got, a)
	}
	if got := tb.Mirror(rb, a.Stream().ID()); got != nil {
		t.Error("Mirror found a reader's mirror under another stream's id")
	}
	if got := tb.Mirror("nobody", a.Stream().ID()); got != nil {
		t.Error("Mirror found an unknown reader")
	}
	tb.Remove(ra)
	if tb.Mirror(ra, a.Stream().ID()) != nil {
		t.Error("Mirror found a removed mirror")
	}
	tb.Remove(ra) // again: nothing happens
}

// TestReceive: the holder's batches fill the mirror's stream, those it
// has already aside; the first, even empty, closes Heard; gone ends it.
func TestReceive(t *testing.T) {
	var tb Table
	_, m := newMirror(t, &tb, "a")
	select {
	case <-m.Heard():
		t.Fatal("Heard closed before the holder answered")
	default:
	}
	m.Receive(nil, false)
	select {
	case <-m.Heard():
	default:
		t.Fatal("Heard still open after an empty batch")
	}
	m.Receive([]callstream.Event{{Seq: 1, Data: []byte(`{"a":1}`)}, {Seq: 2, Data: []byte(`{"b":2}`)}}, false)
	m.Receive([]callstream.Event{{Seq: 2, Data: []byte(`{"again":2}`)}, {Seq: 4, Data: []byte(`{"result":{}}`), Final: true}}, false) // idempotent, and a gap
	evs, done, _, _, err := m.Stream().Since(0, 0)
	if len(evs) != 3 || string(evs[1].Data) != `{"b":2}` || evs[2].Seq != 4 || !done || err != nil {
		t.Errorf("stream after the batches: %+v, done %v, err %v; want seqs 1, 2 (first copy), 4 (final)", evs, done, err)
	}
	if ended(m.Stream()) {
		t.Error("the stream ended without gone")
	}
	m.Receive(nil, true)
	if !ended(m.Stream()) {
		t.Error("gone did not end the stream")
	}
}

// TestAbsent: the replicas' word is kept up to maxAbsent, more dropped.
func TestAbsent(t *testing.T) {
	var tb Table
	_, m := newMirror(t, &tb, "a")
	for range maxAbsent + 3 {
		m.Absent("r")
	}
	if n := len(m.Absences()); n != maxAbsent {
		t.Errorf("%d absences kept, want %d", n, maxAbsent)
	}
	if tag := <-m.Absences(); tag != "r" {
		t.Errorf("absence %q, want r", tag)
	}
}

// TestSilent: Silent reports a holder silent past the bound, not one that
// keeps sending, and returns when stop closes.
func TestSilent(t *testing.T) {
	const silence = 200 * time.Millisecond
	var tb Table
	_, m := newMirror(t, &tb, "a")
	m.Receive(nil, false)
	stop := make(chan struct{})
	done := make(chan bool, 1)
	go func() { done <- m.Silent(silence, stop) }()
	for range 15 { // 1.5 times silence, the holder heard every tenth of it
		time.Sleep(silence / 10)
		m.Receive(nil, false)
	}
	select {
	case <-done:
		t.Fatal("Silent returned while the holder sent")
	default:
	}
	select {
	case silent := <-done:
		if !silent {
			t.Error("Silent reported false without stop")
		}
	case <-time.After(10 * silence):
		t.Fatal("Silent did not report a silent holder")
	}

	m.Receive(nil, false)
	close(stop)
	if m.Silent(time.Hour, stop) {
		t.Error("Silent reported true after stop")
	}
}

// TestEndMirrors: EndMirrors ends the stream of every mirror here.
func TestEndMirrors(t *testing.T) {
	var tb Table
	_, a := newMirror(t, &tb, "a")
	_, b := newMirror(t, &tb, "b")
	tb.EndMirrors()
	if !ended(a.Stream()) || !ended(b.Stream()) {
		t.Error("a mirror's stream outlived EndMirrors")
	}
}

// TestForward: one forward runs per reader, until StopForward, or
// StopForwards, or it ends by itself; one not started is not registered.
func TestForward(t *testing.T) {
	var (
		tb Table
		wg sync.WaitGroup
	)
	start := func(f func()) bool { wg.Go(f); return true }
	running := func(reader string) <-chan struct{} {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		return tb.forwards[reader]
	}
	forward := func(runs chan<- struct{}) func(<-chan struct{}) {
		return func(stop <-chan struct{}) { runs <- struct{}{}; <-stop }
	}

	runs := make(chan struct{}, 4)
	tb.Forward("r1", start, forward(runs))
	tb.Forward("r1", start, forward(runs)) // a second for the same reader is ignored
	tb.Forward("r2", start, forward(runs))
	<-runs
	<-runs
	if len(runs) != 0 {
		t.Fatal("a second forward to the same reader started")
	}
	tb.StopForward("r1")
	tb.StopForward("r1") // again: nothing happens
	if running("r1") != nil || running("r2") == nil {
		t.Error("StopForward did not stop r1's forward alone")
	}
	tb.StopForwards()
	wg.Wait()
	if running("r2") != nil {
		t.Error("StopForwards left a forward")
	}

	tb.Forward("r3", start, func(<-chan struct{}) {}) // done by itself
	wg.Wait()
	if running("r3") != nil {
		t.Error("a forward that returned is still registered")
	}
	tb.Forward("r4", func(func()) bool { return false }, forward(runs))
	if running("r4") != nil || len(runs) != 0 {
		t.Error("a forward that was not started is registered")
	}
}
