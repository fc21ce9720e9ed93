package discovery

import (
	"sync"
	"time"
)

// debouncer calls fn once, d after the last of a burst of Trigger calls.
// It is safe for concurrent use; Stop cancels a pending call.
type debouncer struct {
	d  time.Duration
	fn func()

	// mu guards timer and stopped.
	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
}

func newDebouncer(d time.Duration, fn func()) *debouncer {
	return &debouncer{d: d, fn: fn}
}

// Trigger (re)starts the quiet period.
func (b *debouncer) Trigger() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return
	}
	if b.timer != nil {
		b.timer.Stop()
	}
	b.timer = time.AfterFunc(b.d, b.fn)
}

// Stop cancels a pending call; later Triggers do nothing.
func (b *debouncer) Stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	if b.timer != nil {
		b.timer.Stop()
	}
}
