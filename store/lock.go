package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// defaultLockWait bounds one wait for a PostgreSQL advisory lock (the
// server's lock_timeout). Lock waits again until its ctx ends; the bound only
// limits how long a server backend can go on waiting for a caller that gave
// up (the driver closes the connection when ctx ends, which a backend
// waiting for a lock does not notice).
const defaultLockWait = time.Second

// lockNotAvailable is PostgreSQL's SQLSTATE for a lock_timeout.
const lockNotAvailable = "55P03"

// Lock serialises work on the conversation convID of userID: it blocks until
// no other holder (in any process sharing a PostgreSQL database, or in this
// Store with SQLite) holds the lock, or until ctx ends, in which case it
// returns ctx's error. unlock releases the lock; it may be called more than
// once, and must be called, or the lock stays held until Close.
//
// On PostgreSQL it is a session-level advisory lock on a 64-bit hash of the
// user and conversation ids, held on a connection reserved for it until
// unlock, so each held lock pins one connection. Replicas must not reach
// PostgreSQL through a pooler in transaction mode, which would share that
// session. On SQLite (one process) it is an in-process mutex per
// conversation, held by this Store only: two Stores on one SQLite file do
// not exclude each other.
//
// The lock is not reentrant. Callers (tree, web) also serialise a
// conversation's queries in memory, so in practice the lock is contended
// only between replicas.
func (s *Store) Lock(ctx context.Context, userID, convID string) (unlock func(), err error) {
	if err := s.check(userID, convID); err != nil {
		return nil, err
	}
	key := conversationKey(userID, convID)
	if s.dialect != dialectPostgres {
		if err := s.locks.lock(ctx, key); err != nil {
			return nil, err
		}
		return sync.OnceFunc(func() { s.locks.unlock(key) }), nil
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("lock conversation %q of user %q: %w", convID, userID, err)
	}
	wait := s.lockWait
	if wait <= 0 {
		wait = defaultLockWait
	}
	if err := pgAdvisoryLock(ctx, conn, key, wait); err != nil {
		// The connection is in an unknown state (the lock may have been
		// granted as ctx ended): end the session so the server frees it.
		discard(conn)
		_ = conn.Close() // the session is ended already; the lock error is the one to report
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, fmt.Errorf("lock conversation %q of user %q: %w", convID, userID, err)
	}
	l := &pgLock{conn: conn, key: key}
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		l.release(false)
		return nil, ErrClosed
	}
	if s.pgLocks == nil {
		s.pgLocks = make(map[*pgLock]struct{})
	}
	s.pgLocks[l] = struct{}{}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.pgLocks, l)
		s.mu.Unlock()
		l.release(true)
	}, nil
}

// releasePGLocks ends the sessions of every PostgreSQL lock still held, for
// Close.
func (s *Store) releasePGLocks() {
	s.mu.Lock()
	held := s.pgLocks
	s.pgLocks = nil
	s.mu.Unlock()
	for l := range held {
		l.release(false)
	}
}

// pgLock is a held PostgreSQL advisory lock and the connection holding it.
type pgLock struct {
	conn *sql.Conn
	key  int64
	once sync.Once
}

// release releases the lock once: gracefully (unlock, then return the
// connection to the pool) or not (end the session, which frees the lock).
//
// The graceful unlock releases every advisory lock of the session, not one
// level of l.key: a wait that failed with lock_timeout may still have been
// granted (the server grants the lock and reports the timeout when both
// happen together, as after a stall), and the retry on the same session
// then took it a second time. The session holds no other advisory lock:
// it is reserved for this one.
func (l *pgLock) release(graceful bool) {
	l.once.Do(func() {
		defer func() { _ = l.conn.Close() }() // release has no caller to report to
		if graceful {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := l.conn.ExecContext(ctx, `SELECT pg_advisory_unlock_all()`); err == nil {
				return
			}
		}
		discard(l.conn)
	})
}

// pgAdvisoryLock takes the session advisory lock key on conn, waiting until
// ctx ends. Each wait is bounded by lock_timeout (wait) (set for one transaction
// only, so the pooled connection keeps its defaults); the session lock
// outlives that transaction.
func pgAdvisoryLock(ctx context.Context, conn *sql.Conn, key int64, wait time.Duration) error {
	for {
		err := tryAdvisoryLock(ctx, conn, key, wait)
		var pgErr *pgconn.PgError
		if err == nil || !errors.As(err, &pgErr) || pgErr.Code != lockNotAvailable {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

func tryAdvisoryLock(ctx context.Context, conn *sql.Conn, key int64, wait time.Duration) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // sql.ErrTxDone after Commit
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`SET LOCAL lock_timeout = %d`, max(wait.Milliseconds(), 1))); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, key); err != nil {
		return err
	}
	return tx.Commit()
}

// conversationKey hashes a conversation's key into the 64-bit space of
// PostgreSQL advisory locks. The prefix keeps it apart from other users of
// advisory locks on the same database; a collision only serialises two
// conversations, it never lets two holders in.
func conversationKey(userID, convID string) int64 {
	h := fnv.New64a()
	h.Write([]byte("elysia/conversation\x00"))
	h.Write([]byte(userID))
	h.Write([]byte{0})
	h.Write([]byte(convID))
	return int64(h.Sum64())
}

// keyedMutex is a set of mutexes, one per key, that honour a ctx while
// waiting. Entries exist only while held or waited for. The zero value is
// ready for use.
type keyedMutex struct {
	// mu guards held.
	mu   sync.Mutex
	held map[int64]*keyLock
}

// keyLock is one key's mutex: a token in sem means held. refs counts the
// holder and the waiters, so the entry is dropped when nobody needs it.
type keyLock struct {
	sem  chan struct{}
	refs int
}

func (m *keyedMutex) lock(ctx context.Context, key int64) error {
	m.mu.Lock()
	if m.held == nil {
		m.held = make(map[int64]*keyLock)
	}
	l := m.held[key]
	if l == nil {
		l = &keyLock{sem: make(chan struct{}, 1)}
		m.held[key] = l
	}
	l.refs++
	m.mu.Unlock()

	select {
	case l.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		m.release(key, l)
		return ctx.Err()
	}
}

func (m *keyedMutex) unlock(key int64) {
	m.mu.Lock()
	l := m.held[key]
	m.mu.Unlock()
	<-l.sem
	m.release(key, l)
}

// release drops one reference to l and forgets it when it was the last.
func (m *keyedMutex) release(key int64, l *keyLock) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l.refs--
	if l.refs == 0 {
		delete(m.held, key)
	}
}
