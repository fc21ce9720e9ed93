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
// unlock, so each held lock pins one connection; this Store's calls on the
// locked conversation run on that connection while the lock is held, so a
// query holds one connection, not one more for each read and save. At most
// three quarters of [Options.MaxConns] locks are held at once: Lock waits
// for a slot until ctx ends and then fails with [ErrUnavailable]. Replicas
// must not reach PostgreSQL through a pooler in transaction mode, which
// would share that session. On SQLite (one process) it is an in-process
// mutex per conversation, held by this Store only: two Stores on one
// SQLite file do not exclude each other.
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
	defer func() {
		if err != nil && ctx.Err() == nil {
			err = s.classify(ctx, fmt.Errorf("lock conversation %q of user %q: %w", convID, userID, err))
		}
	}()
	select {
	case s.lockSlots <- struct{}{}:
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, &unavailableError{where: s.where, err: fmt.Errorf(
				"lock conversation %q of user %q: all %d lock connections stayed in use: %w", convID, userID, cap(s.lockSlots), ctx.Err())}
		}
		return nil, ctx.Err()
	}
	l, err := s.pgLock(ctx, key)
	if err != nil {
		<-s.lockSlots
		if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ErrUnavailable) {
			return nil, ctxErr
		}
		return nil, err
	}
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		l.release(false)
		<-s.lockSlots
		return nil, ErrClosed
	}
	if s.pgLocks == nil {
		s.pgLocks = make(map[int64]*pgLock)
	}
	s.pgLocks[key] = l
	s.mu.Unlock()
	return sync.OnceFunc(func() {
		s.mu.Lock()
		if s.pgLocks[key] == l {
			delete(s.pgLocks, key)
		}
		s.mu.Unlock()
		l.release(true)
		<-s.lockSlots
	}), nil
}

// pgLock takes the advisory lock key on a connection of its own. A pooled
// connection found dead before the lock was asked for (the database
// restarted since it was used) is dropped and another tried, as database/sql
// does for its own calls, so that the first queries after an outage do not
// fail for connections that died in it.
func (s *Store) pgLock(ctx context.Context, key int64) (*pgLock, error) {
	wait := s.lockWait
	if wait <= 0 {
		wait = defaultLockWait
	}
	for tries := s.db.Stats().MaxOpenConnections; ; tries-- {
		cctx, cancel := ctx, context.CancelFunc(func() {})
		if _, ok := ctx.Deadline(); !ok {
			cctx, cancel = context.WithTimeout(ctx, s.callTimeout)
		}
		conn, err := s.db.Conn(cctx)
		cancel()
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) { // no connection came free in time
				return nil, &unavailableError{where: s.where, err: fmt.Errorf("wait for a connection: %w", err)}
			}
			return nil, err
		}
		err = pgAdvisoryLock(ctx, conn, key, wait)
		if err == nil {
			return &pgLock{conn: conn, key: key, use: make(chan struct{}, 1)}, nil
		}
		// The connection is in an unknown state (the lock may have been
		// granted as ctx ended): end the session so the server frees it.
		discard(conn)
		_ = conn.Close() // the session is ended already; the lock error is the one to report
		if !errors.Is(err, errDeadConn) || tries <= 0 || ctx.Err() != nil {
			return nil, err
		}
	}
}

// errDeadConn is matched by pgAdvisoryLock's error when the connection
// failed before the lock was asked for.
var errDeadConn = errors.New("connection failed before the lock was asked for")

// releasePGLocks ends the sessions of every PostgreSQL lock still held, for
// Close.
func (s *Store) releasePGLocks() {
	s.mu.Lock()
	held := s.pgLocks
	s.pgLocks = nil
	s.mu.Unlock()
	for _, l := range held {
		l.release(false)
	}
}

// pgLock is a held PostgreSQL advisory lock and the connection holding it.
// use holds a token while a call runs on conn (see Store.on) or the lock
// is released; released, guarded by the token, is then true.
type pgLock struct {
	conn     *sql.Conn
	key      int64
	use      chan struct{}
	released bool
	once     sync.Once
}

// release releases the lock once, after the call running on its
// connection, if any: gracefully (unlock, then return the connection to
// the pool) or not (end the session, which frees the lock).
//
// The graceful unlock releases every advisory lock of the session, not one
// level of l.key: a wait that failed with lock_timeout may still have been
// granted (the server grants the lock and reports the timeout when both
// happen together, as after a stall), and the retry on the same session
// then took it a second time. The session holds no other advisory lock:
// it is reserved for this one.
func (l *pgLock) release(graceful bool) {
	l.once.Do(func() {
		l.use <- struct{}{} // calls on conn are bounded by their timeouts
		l.released = true
		defer func() { <-l.use }()
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
		return fmt.Errorf("%w: %w", errDeadConn, err)
	}
	defer func() { _ = tx.Rollback() }() // sql.ErrTxDone after Commit
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`SET LOCAL lock_timeout = %d`, max(wait.Milliseconds(), 1))); err != nil {
		return fmt.Errorf("%w: %w", errDeadConn, err)
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
