package store

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// blocked is how long a Lock attempt waits to show that it is blocked.
const blocked = 200 * time.Millisecond

func mustLock(t *testing.T, s *Store, user, conv string) func() {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	unlock, err := s.Lock(ctx, user, conv)
	if err != nil {
		t.Fatalf("Lock(%s, %s): %v", user, conv, err)
	}
	t.Cleanup(unlock)
	return unlock
}

// assertBlocked checks that Lock on s does not succeed while the lock is
// held elsewhere, by giving it a short deadline.
func assertBlocked(t *testing.T, s *Store, user, conv string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), blocked)
	defer cancel()
	unlock, err := s.Lock(ctx, user, conv)
	if err == nil {
		unlock()
		t.Fatalf("Lock(%s, %s) succeeded while the lock was held", user, conv)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock(%s, %s) while held: got %v, want context.DeadlineExceeded", user, conv, err)
	}
}

func testLockSerialises(t *testing.T, newDSN newDSN) {
	t.Helper()
	s := openStore(t, newDSN(t))
	unlock := mustLock(t, s, "alice", "c1")
	assertBlocked(t, s, "alice", "c1")
	unlock()
	unlock() // a second call does nothing
	mustLock(t, s, "alice", "c1")()

	// Many goroutines: never two holders at once.
	var holders, entries atomic.Int32
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 5 {
				unlock, err := s.Lock(t.Context(), "alice", "c2")
				if err != nil {
					t.Errorf("Lock: %v", err)
					return
				}
				if n := holders.Add(1); n != 1 {
					t.Errorf("%d holders of one lock", n)
				}
				entries.Add(1)
				holders.Add(-1)
				unlock()
			}
		})
	}
	wg.Wait()
	if got := entries.Load(); got != 20 {
		t.Errorf("%d entries, want 20", got)
	}
}

func testLockHonoursCtx(t *testing.T, newDSN newDSN) {
	t.Helper()
	s := openStore(t, newDSN(t))
	unlock := mustLock(t, s, "alice", "c1")

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		unlock, err := s.Lock(ctx, "alice", "c1")
		if err == nil {
			unlock()
		}
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Lock with a cancelled ctx: got %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Lock did not return after its ctx was cancelled")
	}

	// The waiters that gave up leave nothing behind: the lock passes on.
	assertBlocked(t, s, "alice", "c1")
	unlock()
	mustLock(t, s, "alice", "c1")()
	if s.dialect != dialectPostgres {
		s.locks.mu.Lock()
		n := len(s.locks.held)
		s.locks.mu.Unlock()
		if n != 0 {
			t.Errorf("%d lock entries remain after every lock was released", n)
		}
	}
}

func testLockKeysIndependent(t *testing.T, newDSN newDSN) {
	t.Helper()
	s := openStore(t, newDSN(t))
	mustLock(t, s, "alice", "c1")
	// Another conversation, and another user's conversation of the same
	// id, are free.
	mustLock(t, s, "alice", "c2")
	mustLock(t, s, "bob", "c1")
	// The key is not a plain concatenation.
	mustLock(t, s, "alice"+"c", "1")
	if _, err := s.Lock(t.Context(), "", "c1"); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("Lock with an empty user id: got %v, want an error", err)
	}
}

func testLockAcrossReplicas(t *testing.T, newDSN newDSN) {
	t.Helper()
	dsn := newDSN(t)
	if !strings.HasPrefix(dsn, "postgres") {
		t.Skip("SQLite serves one process: its Lock is per Store")
	}
	a, b := openStore(t, dsn), openStore(t, dsn)
	unlock := mustLock(t, a, "alice", "c1")
	assertBlocked(t, b, "alice", "c1")

	// A waiter on b gets the lock once a releases it.
	got := make(chan error, 1)
	go func() {
		unlock, err := b.Lock(t.Context(), "alice", "c1")
		if err == nil {
			unlock()
		}
		got <- err
	}()
	unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Errorf("Lock on b after a released: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Lock on b did not get the lock after a released it")
	}

	// Closing a replica releases its locks.
	mustLock(t, b, "alice", "c2")
	assertBlocked(t, a, "alice", "c2")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	mustLock(t, a, "alice", "c2")
}

// TestLockKeyedByIDs locks two conversations whose ids the lock's former
// key, a 64-bit hash of the ids joined with NUL bytes, could not tell
// apart: ("a\x00b", "c") and ("a", "b\x00c") are the same bytes joined. Ids
// are chosen by clients, and two conversations must never share a lock,
// whether their ids collide by framing or by hash: the in-process lock is
// keyed by the ids themselves. (PostgreSQL's leases are rows keyed by the
// ids already, and its text cannot hold NUL.)
func TestLockKeyedByIDs(t *testing.T) {
	s := openStore(t, sqliteTestDSN(t))
	mustLock(t, s, "a\x00b", "c")
	ctx, cancel := context.WithTimeout(t.Context(), blocked)
	defer cancel()
	unlock, err := s.Lock(ctx, "a", "b\x00c")
	if err != nil {
		t.Fatalf("Lock of another conversation while the first is held: %v", err)
	}
	unlock()
}
