package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
)

// pgAdmin is a direct connection to the test database, outside any Store,
// for looking at pg_locks and pg_stat_activity.
func pgAdmin(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", testenv.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// withParam returns dsn with the runtime parameter name set to value.
func withParam(t *testing.T, dsn, name, value string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set(name, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// randomID returns a fresh id, so that the advisory lock keys of a test do
// not collide with those of tests running in parallel on the same database.
func randomID(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// advisoryLocks counts the granted advisory locks on key, in any session.
func advisoryLocks(t *testing.T, admin *sql.DB, key int64) int {
	t.Helper()
	var n int
	err := admin.QueryRowContext(t.Context(), `SELECT count(*) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND classid = $1 AND objid = $2 AND objsubid = 1`,
		int64(uint32(uint64(key)>>32)), int64(uint32(uint64(key)))).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitingBackend returns the pid of the backend of application app that
// waits for the advisory lock key, or 0.
func waitingBackend(t *testing.T, admin *sql.DB, app string, key int64) int {
	t.Helper()
	var pid int
	err := admin.QueryRowContext(t.Context(), `SELECT a.pid FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid
		WHERE a.application_name = $1 AND l.locktype = 'advisory' AND NOT l.granted AND l.classid = $2 AND l.objid = $3`,
		app, int64(uint32(uint64(key)>>32)), int64(uint32(uint64(key)))).Scan(&pid)
	if errors.Is(err, sql.ErrNoRows) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestLockAfterFreeze freezes the PostgreSQL backend of a Lock that waits
// (SIGSTOP, as a stalled server or host does), releases the lock elsewhere,
// and thaws the backend after its lock_timeout: the server then reports
// the timeout (55P03) although it granted the lock, and the retry on the
// same session takes it a second time. Once the holder unlocks, no
// advisory lock may be left on the conversation, and another Store must
// get it at once.
func TestLockAfterFreeze(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("freezing a PostgreSQL backend (SIGSTOP) needs root")
	}
	admin := pgAdmin(t)
	dsn := testenv.PostgresDSN(t)
	app := randomID("elysia_freeze_")
	holder, waiter := openStore(t, dsn), openStore(t, withParam(t, dsn, "application_name", app))
	waiter.lockWait = 100 * time.Millisecond
	user, conv := randomID("u"), randomID("c")
	key := conversationKey(user, conv)

	unlockHolder := mustLock(t, holder, user, conv)
	got := make(chan func(), 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		unlock, err := waiter.Lock(ctx, user, conv)
		if err != nil {
			t.Errorf("Lock on the waiter: %v", err)
			unlock = func() {}
		}
		got <- unlock
	}()

	// Freeze the waiter's backend while it waits (not between two waits).
	var pid int
	var stoppedAt time.Time
	testenv.WaitFor(t, 20*time.Second, "the waiter's backend frozen while it waits for the lock", func() bool {
		p := waitingBackend(t, admin, app, key)
		if p == 0 {
			return false
		}
		stoppedAt = time.Now()
		if err := syscall.Kill(p, syscall.SIGSTOP); err != nil {
			t.Fatalf("SIGSTOP backend %d: %v", p, err)
		}
		if waitingBackend(t, admin, app, key) == p {
			pid = p
			return true
		}
		_ = syscall.Kill(p, syscall.SIGCONT) // it was between two waits: try again
		return false
	})
	thaw := func() { _ = syscall.Kill(pid, syscall.SIGCONT) }
	t.Cleanup(thaw)

	// The holder's release grants the lock to the frozen backend.
	unlockHolder()
	testenv.WaitFor(t, 10*time.Second, "the lock granted to the frozen backend", func() bool {
		return advisoryLocks(t, admin, key) == 1
	})
	// Its lock_timeout passes while it is frozen: once thawed, it reports
	// the timeout with the lock granted.
	<-time.After(time.Until(stoppedAt.Add(3 * waiter.lockWait)))
	thaw()

	var unlockWaiter func()
	select {
	case unlockWaiter = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter's Lock did not return after the thaw")
	}
	if n := advisoryLocks(t, admin, key); n != 1 {
		t.Errorf("while the waiter holds the lock: %d advisory locks on it, want 1", n)
	}
	unlockWaiter()
	testenv.WaitFor(t, 5*time.Second, "no advisory lock left after the unlock", func() bool {
		return advisoryLocks(t, admin, key) == 0
	})

	other := openStore(t, dsn)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	unlock, err := other.Lock(ctx, user, conv)
	if err != nil {
		t.Fatalf("Lock from another Store after the unlock: %v", err)
	}
	unlock()
}
