package ring

import "sync"

// New returns a Buffer of the last size values (size > 0).
func New[T any](size int) *Buffer[T] { return &Buffer[T]{size: size} }

// Buffer keeps the last values added. It is safe for concurrent use; make
// one with [New].
type Buffer[T any] struct {
	size int

	// mu guards items and next.
	mu    sync.Mutex
	items []T
	next  int // where the next value goes once the ring is full
}

// Add keeps v, dropping the oldest value when the ring is full.
func (r *Buffer[T]) Add(v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.items) < r.size {
		r.items = append(r.items, v)
		return
	}
	r.items[r.next] = v
	r.next = (r.next + 1) % r.size
}

// Last returns up to n of the newest values, oldest first, in a slice of
// the caller's.
func (r *Buffer[T]) Last(n int) []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]T, 0, len(r.items))
	out = append(out, r.items[r.next:]...)
	out = append(out, r.items[:r.next]...)
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}
