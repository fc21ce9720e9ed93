package tree

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/elysia-go/elysia/tools"
)

// fakeLocker is a goroutine-safe Locker that records its calls; while held
// is set, Lock waits for ctx to end.
type fakeLocker struct {
	mu      sync.Mutex // guards held, locks and unlocks
	held    bool
	locks   int
	unlocks int
}

func (l *fakeLocker) Lock(ctx context.Context, user, conv string) (func(), error) {
	l.mu.Lock()
	held := l.held
	l.mu.Unlock()
	if held {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	l.mu.Lock()
	l.locks++
	l.mu.Unlock()
	return sync.OnceFunc(func() {
		l.mu.Lock()
		l.unlocks++
		l.mu.Unlock()
	}), nil
}

func (l *fakeLocker) counts() (locks, unlocks int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.locks, l.unlocks
}

func TestQueryTakesTheReplicaLock(t *testing.T) {
	l := &fakeLocker{}
	st := newMemStore()
	m := NewManager(&Options{Store: st, Locker: l, QueryWait: 50 * time.Millisecond})
	model := script(step{call: "text_response", args: `{"text":"hi"}`})
	var types []tools.EventType
	err := m.Query(t.Context(), model, "alice", "c1", "q1", "hello", func(e tools.Envelope) { types = append(types, e.Type) })
	if err != nil {
		t.Fatal(err)
	}
	if locks, unlocks := l.counts(); locks != 1 || unlocks != 1 {
		t.Errorf("locks, unlocks = %d, %d; want 1, 1", locks, unlocks)
	}
	if len(types) == 0 || types[len(types)-1] != tools.EventCompleted {
		t.Errorf("events = %v; want a run ending in completed", types)
	}

	l.mu.Lock()
	l.held = true // another replica runs a query of c1
	l.mu.Unlock()
	emitted := 0
	err = m.Query(t.Context(), model, "alice", "c1", "q2", "again", func(tools.Envelope) { emitted++ })
	if !errors.Is(err, ErrBusy) || emitted != 0 {
		t.Errorf("Query while another replica holds the lock = %v with %d events; want ErrBusy and none", err, emitted)
	}
}

func TestQueryWithoutLocker(t *testing.T) {
	m := NewManager(nil)
	model := script(step{call: "text_response", args: `{"text":"hi"}`})
	if err := m.Query(t.Context(), model, "alice", "c1", "", "hello", nil); err != nil {
		t.Fatal(err)
	}
	c, ok, err := m.Reopen(t.Context(), "alice", "c1")
	if err != nil || !ok || len(c.History()) != 2 {
		t.Errorf("Reopen = %v, %v; want the conversation with its history", ok, err)
	}
}
