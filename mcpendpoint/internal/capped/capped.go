// Package capped keeps values by id, at most a limit of them in all and
// a share of that limit per user: the endpoint's 2026-07-28 calls waiting
// for their clients' answers.
package capped

import "sync"

// PerUser is the most values one user may hold in a Table under limit: a
// sixteenth of it, at least 8.
func PerUser(limit int) int { return max(8, limit/16) }

// Table is values by id, each of a user. Its zero value is an empty
// table ready to use; it is safe for concurrent use.
type Table[V comparable] struct {
	mu      sync.Mutex
	byID    map[string]entry[V]
	perUser map[string]int
}

type entry[V comparable] struct {
	user string
	v    V
}

// Hold records v of user under id, unless v is there already, and
// reports whether v is held: false when the table holds limit values, or
// user PerUser(limit).
func (t *Table[V]) Hold(id, user string, v V, limit int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.byID[id]; ok && e.v == v {
		return true
	}
	if len(t.byID) >= limit || t.perUser[user] >= PerUser(limit) {
		return false
	}
	if t.byID == nil {
		t.byID, t.perUser = map[string]entry[V]{}, map[string]int{}
	}
	t.byID[id] = entry[V]{user: user, v: v}
	t.perUser[user]++
	return true
}

// Get returns the value held under id, or the zero value.
func (t *Table[V]) Get(id string) V {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byID[id].v
}

// Forget drops v from under id, if it is held there; it may be called
// more than once.
func (t *Table[V]) Forget(id string, v V) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.byID[id]
	if !ok || e.v != v {
		return
	}
	delete(t.byID, id)
	if t.perUser[e.user]--; t.perUser[e.user] <= 0 {
		delete(t.perUser, e.user)
	}
}

// Values returns the values held, in no order.
func (t *Table[V]) Values() []V {
	t.mu.Lock()
	defer t.mu.Unlock()
	vs := make([]V, 0, len(t.byID))
	for _, e := range t.byID {
		vs = append(vs, e.v)
	}
	return vs
}

// Len returns the number of values held.
func (t *Table[V]) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID)
}
