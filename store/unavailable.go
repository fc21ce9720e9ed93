package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
)

// DefaultCallTimeout bounds a Store call whose ctx has no deadline: waiting
// for a pooled connection, connecting and every statement of the call.
const DefaultCallTimeout = 10 * time.Second

// unavailableError is an error of a Store call that failed because the
// database is unavailable; it matches ErrUnavailable and its cause.
type unavailableError struct {
	where string
	err   error
}

func (e *unavailableError) Error() string {
	return "database " + e.where + " unavailable: " + e.err.Error()
}

func (e *unavailableError) Unwrap() []error { return []error{e.err, ErrUnavailable} }

// call starts a Store call: ctx, bounded by the Store's call timeout when
// it has no deadline of its own, is what the call runs with, and end, which
// must be deferred, ends it and marks *err as [ErrUnavailable] when the
// database is what failed.
func (s *Store) call(ctx context.Context) (_ context.Context, end func(err *error)) {
	parent := ctx
	cancel := context.CancelFunc(func() {})
	if _, ok := ctx.Deadline(); !ok {
		ctx, cancel = context.WithTimeout(ctx, s.callTimeout)
	}
	return ctx, func(err *error) {
		cancel()
		if *err != nil {
			*err = s.classify(parent, *err)
		}
	}
}

// classify marks err, from a call made with the caller's ctx parent, as
// [ErrUnavailable] when the database failed: not when the caller gave up
// (parent ended) or the answer was an answer ([ErrNotFound], a constraint).
func (s *Store) classify(parent context.Context, err error) error {
	if errors.Is(err, ErrUnavailable) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrClosed) || parent.Err() != nil {
		return err
	}
	if databaseDown(err) {
		return &unavailableError{where: s.where, err: err}
	}
	return err
}

// The primary result codes of SQLite that mean it cannot work now rather
// than that the statement was wrong.
const (
	sqliteBusy     = 5
	sqliteLocked   = 6
	sqliteNoMem    = 7
	sqliteReadOnly = 8
	sqliteIOErr    = 10
	sqliteFull     = 13
	sqliteCantOpen = 14
)

// databaseDown reports whether err says the database (or the way to it)
// failed, as opposed to the statement.
func databaseDown(err error) bool {
	var (
		pgErr     *pgconn.PgError
		connErr   *pgconn.ConnectError
		netErr    net.Error
		sqliteErr *sqlite.Error
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded), // the call's own timeout: a pool wait, a stalled server
		errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone), errors.Is(err, pgconn.ErrConnClosed),
		pgconn.Timeout(err),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.As(err, &connErr), errors.As(err, &netErr):
		return true
	case errors.As(err, &pgErr):
		switch pgErr.Code[:min(2, len(pgErr.Code))] {
		case "08", // connection exception
			"53", // insufficient resources: disk full, out of memory, too many connections
			"57", // operator intervention: statement timeout, shutdown, cannot connect now
			"58": // system error: I/O
			return true
		}
		return pgErr.Code == "25006" // read-only transaction: a standby after a failover
	case errors.As(err, &sqliteErr):
		switch sqliteErr.Code() & 0xff {
		case sqliteBusy, sqliteLocked, sqliteNoMem, sqliteReadOnly, sqliteIOErr, sqliteFull, sqliteCantOpen:
			return true
		}
	}
	return false
}

// firstConnectWait bounds how long Open waits out SQLITE_BUSY on its first
// connection (the same as busy_timeout).
const firstConnectWait = 10 * time.Second

// ping makes the first connection. On SQLite, another process opening the
// same file at that moment (replicas starting together, or a restart while
// the previous process is still exiting) can make the connection's
// pragmas answer SQLITE_BUSY at once, without the busy handler: switching
// to WAL and reading the WAL index the other process is building do. ping
// waits that out, up to firstConnectWait or ctx's end.
func (s *Store) ping(ctx context.Context) error {
	deadline := time.Now().Add(firstConnectWait)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 250*time.Millisecond) {
		err := s.db.PingContext(ctx)
		var sqliteErr *sqlite.Error
		if err == nil || s.dialect != dialectSQLite || !errors.As(err, &sqliteErr) || sqliteErr.Code()&0xff != sqliteBusy ||
			time.Now().Add(wait).After(deadline) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}
