package tasks

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// MemStore is the Store of one process. Its zero value is not ready: see
// NewMemStore. It is safe for concurrent use.
type MemStore struct {
	mu    sync.Mutex
	tasks map[string]memTask
}

type memTask struct {
	user string
	t    State
}

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore { return &MemStore{tasks: map[string]memTask{}} }

// CreateTask keeps task id of user, working, until expires; it drops the
// tasks past their expiry first. An id kept already is an error.
func (m *MemStore) CreateTask(_ context.Context, id, user string, expires time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	for k, t := range m.tasks {
		if now.After(t.t.Expires) {
			delete(m.tasks, k)
		}
	}
	if _, ok := m.tasks[id]; ok {
		return fmt.Errorf("task %s exists already", id)
	}
	m.tasks[id] = memTask{user: user, t: State{Status: Working, Created: now, Updated: now, Expires: expires}}
	return nil
}

// Task returns task id of user, or ErrNotFound.
func (m *MemStore) Task(_ context.Context, id, user string) (State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tasks[id]
	if !ok || t.user != user || time.Now().After(t.t.Expires) {
		return State{}, ErrNotFound
	}
	return t.t, nil
}

// SwapTask moves task id of user to next if it is at revision, and
// reports whether it did; it keeps the task's Created and Expires, sets
// Updated to now and counts the Revision.
func (m *MemStore) SwapTask(_ context.Context, id, user string, revision int64, next State) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tasks[id]
	if !ok || t.user != user || time.Now().After(t.t.Expires) {
		return false, ErrNotFound
	}
	if t.t.Revision != revision {
		return false, nil
	}
	next.Created, next.Expires, next.Updated, next.Revision = t.t.Created, t.t.Expires, time.Now(), revision+1
	t.t = next
	m.tasks[id] = t
	return true, nil
}
