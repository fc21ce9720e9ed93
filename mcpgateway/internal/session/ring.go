package session

import "sync"

// ring keeps the last size values added (a server's log messages, a stdio
// child's stderr lines). It is safe for concurrent use; size is set before
// the first add.
type ring[T any] struct {
	size int

	// mu guards items and next.
	mu    sync.Mutex
	items []T
	next  int // where the next value goes once the ring is full
}

// add keeps v, dropping the oldest value when the ring is full.
func (r *ring[T]) add(v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.items) < r.size {
		r.items = append(r.items, v)
		return
	}
	r.items[r.next] = v
	r.next = (r.next + 1) % r.size
}

// last returns up to n of the newest values, oldest first, in a slice of
// the caller's.
func (r *ring[T]) last(n int) []T {
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
