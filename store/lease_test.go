package store

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
)

// TestLocksDoNotPinConnections holds three times as many conversation
// locks as the pool has connections, all at once, as a replica does while
// its queries wait for a slow model: every Lock succeeds at once, and each
// holder saves and reads on the pool.
func TestLocksDoNotPinConnections(t *testing.T) {
	const maxConns, holders = 4, 12
	s := openStoreWith(t, testenv.PostgresDSN(t), &Options{MaxConns: maxConns, CallTimeout: 3 * time.Second})
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		unlocks []func()
	)
	t.Cleanup(func() {
		for _, u := range unlocks {
			u()
		}
	})
	for i := range holders {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			unlock, err := s.Lock(ctx, "alice", randomID("c"))
			if err != nil {
				t.Errorf("Lock %d of %d with a pool of %d: %v", i+1, holders, maxConns, err)
				return
			}
			mu.Lock()
			unlocks = append(unlocks, unlock)
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// Every holder saves while every lock is held.
	for i := range holders {
		wg.Go(func() {
			if err := runQuery(t.Context(), s, "alice", randomID("c"), i); err != nil {
				t.Errorf("query %d while %d locks are held: %v", i, holders, err)
			}
		})
	}
	wg.Wait()
	if n := s.db.Stats().OpenConnections; n > maxConns {
		t.Errorf("%d connections open, want at most %d", n, maxConns)
	}
}

// expireLease makes the lease on the conversation (user, conv) look
// expired, as it is when its holder stalled for longer than its time to
// live, using the Store admin (any Store on the same schema).
func expireLease(t *testing.T, admin *Store, user, conv string) {
	t.Helper()
	res, err := admin.db.ExecContext(t.Context(), `UPDATE conversation_locks
		SET expires_at = clock_timestamp() - interval '1 second' WHERE user_id = $1 AND conversation_id = $2`, user, conv)
	if err != nil {
		t.Fatalf("expire the lease: %v", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("expire the lease: %d leases on the conversation, want 1", n)
	}
}

// saveTurn saves one query's turn of the conversation (user, conv) on s.
func saveTurn(ctx context.Context, s *Store, user, conv, queryID string) error {
	c := &Conversation{UserID: user, ID: conv, Title: queryID}
	turn := &Turn{QueryID: queryID, Messages: json.RawMessage(`[{"role":"user","content":"` + queryID + `"}]`)}
	return s.SaveQuery(ctx, c, turn, queryID, []NewEvent{{Envelope: json.RawMessage(`{"type":"completed"}`)}})
}

// TestLostLockCannotSave fences a holder whose lock was taken over (its
// lease expired, as after a stall): its save is refused with ErrLockLost
// and writes nothing, and the new holder's turns are the conversation's.
func TestLostLockCannotSave(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	a, b := openStore(t, dsn), openStore(t, dsn)
	user, conv := "alice", randomID("c")
	unlockA := mustLock(t, a, user, conv)
	if err := saveTurn(t.Context(), a, user, conv, "a1"); err != nil {
		t.Fatalf("save by the holder: %v", err)
	}
	expireLease(t, b, user, conv)
	unlockB := mustLock(t, b, user, conv)
	if err := saveTurn(t.Context(), b, user, conv, "b1"); err != nil {
		t.Fatalf("save by the new holder: %v", err)
	}
	err := saveTurn(t.Context(), a, user, conv, "a2")
	if !errors.Is(err, ErrLockLost) {
		t.Fatalf("save by the holder whose lock was taken over: got %v, want ErrLockLost", err)
	}
	turns, err := b.Turns(t.Context(), user, conv)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tu := range turns {
		got = append(got, tu.QueryID)
	}
	if len(got) != 2 || got[0] != "a1" || got[1] != "b1" {
		t.Errorf("turns %v, want [a1 b1]", got)
	}
	// The old holder's unlock leaves the new holder's lease alone.
	unlockA()
	assertBlocked(t, a, user, conv)
	if err := saveTurn(t.Context(), b, user, conv, "b2"); err != nil {
		t.Errorf("save by the new holder after the old one unlocked: %v", err)
	}
	unlockB()
	mustLock(t, a, user, conv)()
}

// TestSaveExcludesTakeover starts a save by a holder whose lease has
// expired but was not taken over, and pauses it inside its transaction
// while another Store tries to take the lock: the save's check renews the
// lease and holds its row, so the takeover waits for the save to commit
// and then finds the lease fresh. The save succeeds, and the other Store
// gets the lock only once the holder unlocks.
func TestSaveExcludesTakeover(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	app := randomID("elysia_takeover_")
	a, b := openStore(t, dsn), openStore(t, withParam(t, dsn, "application_name", app))
	user, conv := "alice", randomID("c")
	unlockA := mustLock(t, a, user, conv)
	expireLease(t, b, user, conv)

	inSave, resume := make(chan struct{}), make(chan struct{})
	a.beforeEvent = func(queryID string, i int) error {
		if queryID == "a1" && i == 0 {
			close(inSave)
			<-resume
		}
		return nil
	}
	saved := make(chan error, 1)
	go func() { saved <- saveTurn(t.Context(), a, user, conv, "a1") }()
	<-inSave

	taken := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		unlock, err := b.Lock(ctx, user, conv)
		if err == nil {
			unlock()
		}
		taken <- err
	}()
	// The takeover's first try waits on the lease's row until the save
	// ends; let the save end only once that try is under way (or over, if
	// the takeover did not wait).
	var takeErr error
	tookEarly := false
	testenv.WaitFor(t, 10*time.Second, "the takeover waiting on the lease's row", func() bool {
		select {
		case takeErr = <-taken:
			tookEarly = true
			return true
		default:
		}
		var n int
		err := a.db.QueryRowContext(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = $1 AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO conversation_locks%'`, app).Scan(&n)
		return err == nil && n > 0
	})
	close(resume)
	if err := <-saved; err != nil {
		t.Fatalf("save by the holder during a takeover: %v", err)
	}
	if !tookEarly {
		takeErr = <-taken
	}
	if !errors.Is(takeErr, context.DeadlineExceeded) {
		t.Fatalf("takeover while the holder saved: got %v, want context.DeadlineExceeded", takeErr)
	}
	unlockA()
	mustLock(t, b, user, conv)()
}

// TestCrashedHolderLeaseExpires cuts a holder off from the database for
// good, as a replica that crashed is: its lease is not released, and
// another Store gets the lock once the lease's time to live has passed,
// not before.
func TestCrashedHolderLeaseExpires(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	const ttl = 2 * time.Second
	a := openStoreWith(t, u.String(), &Options{CallTimeout: time.Second})
	b := openStore(t, dsn)
	a.leaseTTL, b.leaseTTL = ttl, ttl
	user, conv := "alice", randomID("c")
	lockedAt := time.Now()
	unlock := mustLock(t, a, user, conv)
	p.close() // a crashes: it never renews nor releases its lease
	unlock()
	assertBlocked(t, b, user, conv)
	ctx, cancel := context.WithTimeout(t.Context(), 4*ttl)
	defer cancel()
	unlockB, err := b.Lock(ctx, user, conv)
	if err != nil {
		t.Fatalf("Lock after the holder crashed: %v", err)
	}
	unlockB()
	if d := time.Since(lockedAt); d < ttl {
		t.Errorf("the lock passed on %v after the holder took it, before its time to live (%v)", d, ttl)
	}
}

// TestLeaseReleasedAfterOutage stops the database under a holder (its
// port refuses connections) as it unlocks, so that the release fails: once
// the database is back the holder releases the lease itself, long before
// it would expire. No advisory lock is held meanwhile.
func TestLeaseReleasedAfterOutage(t *testing.T) {
	admin := pgAdmin(t)
	dsn := testenv.PostgresDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, u.Host)
	addr := p.ln.Addr().String()
	u.Host = addr
	a := openStoreWith(t, u.String(), &Options{MaxConns: 2, CallTimeout: time.Second})
	b := openStore(t, dsn)
	a.leaseTTL = time.Minute
	user, conv := "alice", randomID("c")
	unlock := mustLock(t, a, user, conv)
	if n := advisoryLocks(t, admin, advisoryConversationKey(user, conv)); n != 0 {
		t.Errorf("%d advisory locks on the conversation, want 0", n)
	}
	p.close()
	start := time.Now()
	unlock() // the release fails: the database is unreachable
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("unlock on a stopped database took %v, want about the call timeout (1s)", d)
	}
	assertBlocked(t, b, user, conv)

	// The database comes back on the same address.
	var back *tcpProxy
	testenv.WaitFor(t, 10*time.Second, "the proxy listening again on "+addr, func() bool {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return false
		}
		back = &tcpProxy{ln: ln, target: p.target}
		back.wg.Go(back.serve)
		return true
	})
	t.Cleanup(back.close)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	unlockB, err := b.Lock(ctx, user, conv)
	if err != nil {
		t.Fatalf("Lock once the holder's database is back: %v", err)
	}
	unlockB()
}
