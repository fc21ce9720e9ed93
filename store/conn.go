package store

import (
	"context"
	"database/sql"
)

// dbtx is what a call runs its statements on: the pool, or the connection
// of a lock held on the call's conversation.
type dbtx interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

var (
	_ dbtx = (*sql.DB)(nil)
	_ dbtx = (*sql.Conn)(nil)
)

// on returns what a call on the conversation convID of userID runs on: the
// connection of this Store's lock on it while one is held (waiting for any
// other call running there), so that a query holds one connection for its
// lock, reads and saves, and its saves never wait for the pool; otherwise
// the pool. done must be called when the call is over.
func (s *Store) on(ctx context.Context, userID, convID string) (db dbtx, done func(), err error) {
	if s.dialect != dialectPostgres {
		return s.db, func() {}, nil
	}
	key := conversationKey(userID, convID)
	s.mu.Lock()
	l := s.pgLocks[key]
	s.mu.Unlock()
	if l == nil {
		return s.db, func() {}, nil
	}
	select {
	case l.use <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	if l.released { // released while this call waited: the lock is gone
		<-l.use
		return s.db, func() {}, nil
	}
	return l.conn, func() { <-l.use }, nil
}
