package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"
)

// sentWriter is the fixture's stdout: it counts the notifications written
// to it, so that a tool answers only once its own have gone out. mcp-go's
// stdio server (v1.2.1) writes notifications on a goroutine of their own
// and answers on another, so an answer can reach the client before the
// last progress report or log message of its call; the conformance
// scenarios, run one at a time, count those. Its methods are safe for
// concurrent use.
type sentWriter struct {
	w io.Writer
	// mu guards n and changed.
	mu sync.Mutex
	n  int
	// changed is closed (and replaced) when n grows.
	changed chan struct{}
}

// maxSentWait bounds how long a tool waits for its notifications to be
// written.
const maxSentWait = 5 * time.Second

var notificationMark = []byte(`"method":"notifications/`)

func newSentWriter(w io.Writer) *sentWriter {
	return &sentWriter{w: w, changed: make(chan struct{})}
}

func (s *sentWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if k := bytes.Count(p[:n], notificationMark); k > 0 {
		s.mu.Lock()
		s.n += k
		close(s.changed)
		s.changed = make(chan struct{})
		s.mu.Unlock()
	}
	return n, err
}

// count returns how many notifications were written so far.
func (s *sentWriter) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// await waits until n notifications were written in all, ctx ends, or
// maxSentWait passes.
func (s *sentWriter) await(ctx context.Context, n int) error {
	t := time.NewTimer(maxSentWait)
	defer t.Stop()
	for {
		s.mu.Lock()
		got, changed := s.n, s.changed
		s.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return fmt.Errorf("%d notifications written after %v, want %d", got, maxSentWait, n)
		}
	}
}
