package store

// Conversation locks on PostgreSQL are leases, rows of conversation_locks,
// rather than session advisory locks. An advisory lock lives in a session,
// so each held lock pinned a pooled connection from the query's start to
// its save, model calls included: a replica ran at most ¾ of its pool's
// queries at once, and the others failed with "database unavailable" while
// the database idled. A lease lives in a row: holding it costs nothing
// between the statements that take, renew and release it, so the locks held
// at once are bounded by nothing but the callers' own limits. One locking
// session per replica (pg_try_advisory_lock for every conversation on one
// connection) would also stop the pinning, but then every lock of a
// replica dies with that one session, and a save can only be fenced by
// checking the session from another one, which races with its end; a
// lease's owner is checked and renewed in the save's own transaction, which
// holds the lease's row until it commits, so a takeover waits for the save
// and then finds the lease fresh, or the save finds the lease gone.
//
// What a lease costs: a holder that crashes (or is cut off from the
// database) keeps its conversations locked until their leases expire,
// [defaultLeaseTTL] after their last renewal, where an advisory lock ended
// with the session; queries on those conversations wait meanwhile (within
// their own wait, 30 s by default). A holder that stalls for longer than
// the time to live may be taken over: its save then fails with
// [ErrLockLost] rather than overwriting the new holder's. A waiter polls
// with a back-off of up to [leaseMaxBackoff], only one waiter per
// conversation and process at a time.

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"sync"
	"time"
)

// defaultLeaseTTL is how long a conversation lock's lease lasts after it
// was taken or last renewed: what a crashed holder costs its conversations.
// Holders renew every third of it.
const defaultLeaseTTL = 15 * time.Second

// leaseTick is the longest time between two runs of the lease keeper, which
// renews the leases held and retries the releases that failed.
const leaseTick = time.Second

// The bounds of the wait between two tries at a lease held elsewhere; it
// doubles from the first to the second.
const (
	leaseMinBackoff = 5 * time.Millisecond
	leaseMaxBackoff = 100 * time.Millisecond
)

// maxPendingReleases bounds the releases that failed and wait to be tried
// again (while the database is out of reach); beyond it the oldest are
// forgotten, and their leases expire instead.
const maxPendingReleases = 4096

// leaseMigration creates the leases' table, on PostgreSQL only. It is
// unlogged: a lease is worth nothing after a crash of the database, which
// empties such a table, and taking and releasing one writes no WAL.
var leaseMigration = []string{
	`CREATE UNLOGGED TABLE conversation_locks (
		user_id TEXT NOT NULL,
		conversation_id TEXT NOT NULL,
		owner TEXT NOT NULL,
		expires_at TIMESTAMPTZ NOT NULL,
		PRIMARY KEY (user_id, conversation_id))`,
	`CREATE INDEX conversation_locks_owner ON conversation_locks (owner)`,
}

// The statements on leases; $ttl is the time to live in seconds. Times are
// the database's, so the replicas' clocks do not matter.
const (
	// takeLeaseSQL inserts the lease, or takes it over once expired: one
	// row affected means taken.
	takeLeaseSQL = `INSERT INTO conversation_locks (user_id, conversation_id, owner, expires_at)
		VALUES ($1, $2, $3, clock_timestamp() + make_interval(secs => $4))
		ON CONFLICT (user_id, conversation_id) DO UPDATE
		SET owner = excluded.owner, expires_at = excluded.expires_at
		WHERE conversation_locks.expires_at < clock_timestamp()`
	// fenceLeaseSQL renews the lease if it is still the owner's, and
	// holds its row until the transaction ends: no row affected means lost.
	fenceLeaseSQL = `UPDATE conversation_locks SET expires_at = clock_timestamp() + make_interval(secs => $4)
		WHERE user_id = $1 AND conversation_id = $2 AND owner = $3`
	renewLeasesSQL = `UPDATE conversation_locks SET expires_at = clock_timestamp() + make_interval(secs => $2)
		WHERE owner = ANY($1)`
	releaseLeaseSQL  = `DELETE FROM conversation_locks WHERE user_id = $1 AND conversation_id = $2 AND owner = $3`
	releaseLeasesSQL = `DELETE FROM conversation_locks WHERE owner = ANY($1)`
	// pruneLeasesSQL deletes the leases left by crashed holders long
	// after they expired; an expired lease is free to take anyway.
	pruneLeasesSQL = `DELETE FROM conversation_locks WHERE expires_at < clock_timestamp() - interval '1 minute'`
)

// lease is a conversation lock's lease: the conversation and its owner
// token, random for each Lock.
type lease struct {
	user, conv, owner string
}

// conversationRef names a conversation in leaseKeeper.held and keyedMutex.
type conversationRef struct{ user, conv string }

// leaseKeeper is a Store's part in its PostgreSQL leases: those it holds,
// which its goroutine renews, and those whose release failed, which it
// tries again.
type leaseKeeper struct {
	// mu guards every field.
	mu      sync.Mutex
	held    map[conversationRef]string // owner by conversation
	pending []lease
	// cancel ends the goroutine, done is closed when it has; both nil
	// until the first Lock.
	cancel context.CancelFunc
	done   chan struct{}
}

// newLeaseOwner returns a random owner token.
func newLeaseOwner() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// ttl is the time to live of the Store's leases.
func (s *Store) ttl() time.Duration {
	if s.leaseTTL > 0 {
		return s.leaseTTL
	}
	return defaultLeaseTTL
}

// takeLease waits until it holds l or ctx ends, then records it as held.
func (s *Store) takeLease(ctx context.Context, l lease) error {
	if err := s.startLeaseKeeper(); err != nil {
		return err
	}
	backoff := leaseMinBackoff
	for {
		took, err := s.tryLease(ctx, l)
		if err != nil {
			// The statement may have taken the lease as it failed.
			s.queueRelease(l)
			return fmt.Errorf("lock conversation %q of user %q: %w", l.conv, l.user, err)
		}
		if took {
			break
		}
		wait := backoff/2 + mrand.N(backoff/2+1) // jittered, so that waiters spread out
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, leaseMaxBackoff)
	}
	k := &s.leases
	k.mu.Lock()
	if s.closed.Load() { // Close released the leases held before this one
		k.mu.Unlock()
		s.deleteLease(l)
		return ErrClosed
	}
	if k.held == nil {
		k.held = make(map[conversationRef]string)
	}
	k.held[conversationRef{l.user, l.conv}] = l.owner
	k.mu.Unlock()
	return nil
}

// tryLease takes l if nobody holds its conversation's lease, in one
// statement.
func (s *Store) tryLease(ctx context.Context, l lease) (took bool, err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	res, err := s.db.ExecContext(ctx, takeLeaseSQL, l.user, l.conv, l.owner, s.ttl().Seconds())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// releaseLease forgets l and deletes its row, unless Close released it
// already.
func (s *Store) releaseLease(l lease) {
	k := &s.leases
	k.mu.Lock()
	ref := conversationRef{l.user, l.conv}
	held := k.held[ref] == l.owner
	if held {
		delete(k.held, ref)
	}
	k.mu.Unlock()
	if held {
		s.deleteLease(l)
	}
}

// deleteLease deletes l's row; when the database cannot be reached, the
// keeper tries again later.
func (s *Store) deleteLease(l lease) {
	ctx, cancel := context.WithTimeout(context.Background(), s.callTimeout)
	defer cancel()
	if _, err := s.db.ExecContext(ctx, releaseLeaseSQL, l.user, l.conv, l.owner); err != nil {
		s.logger.Warn("release conversation lock: will try again", "user_id", l.user, "conversation_id", l.conv, logKeyErr, err)
		s.queueRelease(l)
	}
}

// queueRelease has the keeper delete l's row.
func (s *Store) queueRelease(l lease) {
	k := &s.leases
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.pending) >= maxPendingReleases {
		k.pending = k.pending[1:]
	}
	k.pending = append(k.pending, l)
}

// fenceLease, in the transaction tx of a save of the conversation (user,
// conv), checks that the lease this Store holds on it, if any, is still
// its own, renews it and holds its row until tx ends.
func (s *Store) fenceLease(ctx context.Context, tx *sql.Tx, user, conv string) error {
	if s.dialect != dialectPostgres {
		return nil
	}
	k := &s.leases
	k.mu.Lock()
	owner, ok := k.held[conversationRef{user, conv}]
	k.mu.Unlock()
	if !ok {
		return nil
	}
	res, err := tx.ExecContext(ctx, fenceLeaseSQL, user, conv, owner, s.ttl().Seconds())
	if err != nil {
		return fmt.Errorf("check the conversation's lock: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("check the conversation's lock: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("%w: its lease expired and another holder took it", ErrLockLost)
	}
	return nil
}

// startLeaseKeeper starts the keeper's goroutine once; Close ends it.
func (s *Store) startLeaseKeeper() error {
	k := &s.leases
	k.mu.Lock()
	defer k.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	if k.cancel != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	k.cancel, k.done = cancel, make(chan struct{})
	go s.keepLeases(ctx, k.done)
	return nil
}

// keepLeases renews the leases held every third of their time to live and
// tries the failed releases again, until ctx ends; then it closes done.
func (s *Store) keepLeases(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	renewEvery := s.ttl() / 3
	t := time.NewTicker(min(leaseTick, renewEvery))
	defer t.Stop()
	lastRenew, lastPrune := time.Now(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if time.Since(lastRenew) >= renewEvery {
			lastRenew = time.Now()
			s.renewLeases(ctx)
		}
		s.retryReleases(ctx)
		if time.Since(lastPrune) >= time.Minute {
			lastPrune = time.Now()
			s.leaseStatement(ctx, "prune expired conversation locks", pruneLeasesSQL)
		}
	}
}

// renewLeases extends every lease held, in one statement.
func (s *Store) renewLeases(ctx context.Context) {
	k := &s.leases
	k.mu.Lock()
	owners := make([]string, 0, len(k.held))
	for _, o := range k.held {
		owners = append(owners, o)
	}
	k.mu.Unlock()
	if len(owners) == 0 {
		return
	}
	n, ok := s.leaseStatement(ctx, "renew conversation locks", renewLeasesSQL, owners, s.ttl().Seconds())
	if ok && n < int64(len(owners)) {
		// Released meanwhile, or expired and taken over: a save under a
		// lost one fails with ErrLockLost.
		s.logger.Debug("conversation locks not renewed", "held", len(owners), "renewed", n)
	}
}

// retryReleases deletes the leases whose release failed.
func (s *Store) retryReleases(ctx context.Context) {
	k := &s.leases
	k.mu.Lock()
	pending := k.pending
	k.pending = nil
	k.mu.Unlock()
	if len(pending) == 0 {
		return
	}
	owners := make([]string, len(pending))
	for i, l := range pending {
		owners[i] = l.owner
	}
	if _, ok := s.leaseStatement(ctx, "release conversation locks", releaseLeasesSQL, owners); !ok {
		for _, l := range pending {
			s.queueRelease(l)
		}
	}
}

// leaseStatement runs one of the keeper's statements, bounded by the call
// timeout, and logs its failure; it returns the rows affected.
func (s *Store) leaseStatement(parent context.Context, what, query string, args ...any) (int64, bool) {
	ctx, cancel := context.WithTimeout(parent, s.callTimeout)
	defer cancel()
	res, err := s.db.ExecContext(ctx, query, args...)
	if err == nil {
		var n int64
		if n, err = res.RowsAffected(); err == nil {
			return n, true
		}
	}
	if parent.Err() == nil { // not ended by Close
		s.logger.Warn(what, logKeyErr, err)
	}
	return 0, false
}

// closeLeases, for Close, ends the keeper and releases every lease held
// or waiting to be released, once, bounded by the call timeout.
func (s *Store) closeLeases() {
	k := &s.leases
	k.mu.Lock()
	cancel, done := k.cancel, k.done
	owners := make([]string, 0, len(k.held)+len(k.pending))
	for _, o := range k.held {
		owners = append(owners, o)
	}
	for _, l := range k.pending {
		owners = append(owners, l.owner)
	}
	k.held, k.pending = nil, nil
	k.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
	if len(owners) > 0 {
		s.leaseStatement(context.Background(), "release conversation locks on close", releaseLeasesSQL, owners)
	}
}
