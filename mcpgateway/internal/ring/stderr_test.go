package ring

import (
	"io"
	"runtime"
	"strings"
	"testing"
)

// endless yields n bytes of 'x' with no newline, then tail.
type endless struct {
	n    int
	tail *strings.Reader
}

func (e *endless) Read(p []byte) (int, error) {
	if e.n == 0 {
		return e.tail.Read(p)
	}
	k := min(len(p), e.n)
	for i := range k {
		p[i] = 'x'
	}
	e.n -= k
	return k, nil
}

// TestStderrEndlessLineIsBounded feeds the drain 64 MiB on one line: what it
// allocates stays near its buffer, the line is kept cut, and the lines
// after it are still read.
func TestStderrEndlessLineIsBounded(t *testing.T) {
	// Not parallel: it measures the process's allocations.
	r := NewStderr(func(s string) string { return s })
	src := &endless{n: 64 << 20, tail: strings.NewReader("\nafter\n")}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r.Drain(src)
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("draining one 64 MiB line allocated %d bytes, want under 1 MiB", grew)
	}
	lines := r.Last()
	if len(lines) != 2 || len(lines[0]) != maxStderrLine+len("...") || lines[1] != "after" {
		t.Errorf("kept %d lines (first %d bytes), want the cut line and 'after': %q", len(lines), len(lines[0]), lines[len(lines)-1])
	}
	if _, err := src.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("drain stopped before the end: %v", err)
	}
}
