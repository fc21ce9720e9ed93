package callstream

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
)

// report is a report of a third of MaxBytes, made of c: from the fourth
// such report on, each Add drops the oldest.
func report(c byte) []byte { return []byte(strings.Repeat(string(c), MaxBytes/3)) }

// fill adds n reports to st, the first made of 'a', the next of 'b'...
func fill(st *Stream, n int) {
	for i := range n {
		st.Add(report(byte('a'+i%26)), false)
	}
}

// seqs are the seqs of evs.
func seqs(evs []Event) []int {
	var s []int
	for _, ev := range evs {
		s = append(s, ev.Seq)
	}
	return s
}

// TestSinceCopies: what Since handed out stays as it was while Add trims
// the stream under it, and reading it races with nothing (run with
// -race).
func TestSinceCopies(t *testing.T) {
	var r Registry
	st := r.Open("s", "u", func() {})
	fill(st, 3)
	evs, _, _, _, _ := st.Since(0, 0)
	if got := seqs(evs); len(got) != 3 || got[0] != 1 {
		t.Fatalf("Since(0) = %v, want 1 to 3", got)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // a reader writing them out meanwhile
		for {
			select {
			case <-stop:
				return
			default:
			}
			sum := 0
			for _, ev := range evs {
				sum += ev.Seq + len(ev.Data)
			}
			if sum != 1+2+3+3*(MaxBytes/3) {
				t.Errorf("the events read add up to %d", sum)
				return
			}
		}
	})
	fill(st, 3)
	close(stop)
	wg.Wait()
	for i, ev := range evs {
		if ev.Seq != i+1 || len(ev.Data) != MaxBytes/3 || ev.Data[0] != byte('a'+i) {
			t.Errorf("event %d changed under its reader: seq %d, %d bytes of %q", i, ev.Seq, len(ev.Data), ev.Data[:min(1, len(ev.Data))])
		}
	}
}

// TestSinceDropped: a reader whose next message was dropped gets
// ErrEventsDropped with what is kept; one before what is kept, nothing.
func TestSinceDropped(t *testing.T) {
	var r Registry
	st := r.Open("s", "u", func() {})
	fill(st, 5) // keeps 3 to 5
	mirror := NewMirror(strings.Repeat("a", IDLen), "s", "u", 3)
	mirror.AddAt(4, []byte(`{}`), false)
	mirror.AddAt(7, []byte(`{}`), false) // 5 and 6 never relayed
	for _, tt := range []struct {
		name    string
		st      *Stream
		after   int
		want    []int
		dropped bool
	}{
		{"from the start", st, 0, []int{3, 4, 5}, true},
		{"one dropped", st, 1, []int{3, 4, 5}, true},
		{"right before what is kept", st, 2, []int{3, 4, 5}, false},
		{"within what is kept", st, 4, []int{5}, false},
		{"at the end", st, 5, nil, false},
		{"mirror from its start", mirror, 3, []int{4, 7}, false}, // Serve marks the gap within
		{"mirror past a lost batch", mirror, 4, []int{7}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			evs, _, _, _, err := tt.st.Since(tt.after, 0)
			if got := seqs(evs); !slices.Equal(got, tt.want) || errors.Is(err, ErrEventsDropped) != tt.dropped {
				t.Errorf("Since(%d) = %v, %v; want %v, dropped %v", tt.after, got, err, tt.want, tt.dropped)
			}
		})
	}
}
