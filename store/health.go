package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"modernc.org/sqlite"
)

// maxProbe bounds the bytes a readiness probe writes to check that a save
// which failed for lack of room would now fit.
const maxProbe = 4 << 20

// healthTable is where a readiness probe writes on SQLite. It is not part
// of the migrated schema: it holds nothing of value, and Open creates it
// when missing.
const healthTable = `CREATE TABLE IF NOT EXISTS store_health (id INTEGER PRIMARY KEY, checked_at INTEGER NOT NULL, pad BLOB)`

// Ping checks that the database can take work, for readiness probes. On
// PostgreSQL it pings a connection. On SQLite it writes: a row of a health
// table, committed; and after a save failed because the database could not
// grow or be written (a full disk), as many bytes as that save needed,
// which are then freed for the next save: until such a write succeeds,
// Ping fails. A database that answers reads but cannot save is not ready.
func (s *Store) Ping(ctx context.Context) (err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if s.closed.Load() {
		return ErrClosed
	}
	if s.dialect == dialectPostgres {
		if err := s.db.PingContext(ctx); err != nil {
			return fmt.Errorf("ping %s: %w", s.where, err)
		}
		return nil
	}
	failed := s.failedSave.Load()
	need := failed
	probe := func(ctx context.Context, tx *sql.Tx) (func(), error) {
		pad := make([]byte, min(need, maxProbe))
		if _, err := tx.ExecContext(ctx, `INSERT INTO store_health (id, checked_at, pad) VALUES (1, ?, ?)
			ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at, pad = excluded.pad`,
			s.now().UnixMicro(), pad); err != nil {
			return nil, err
		}
		return func() {}, nil // nothing to record after the commit
	}
	if err := s.group.do(ctx, probe); err != nil {
		return fmt.Errorf("write to %s: %w", s.where, err)
	}
	if need == 0 {
		return nil
	}
	need = 0 // the room taken goes back for the saves
	if err := s.group.do(ctx, probe); err != nil {
		return fmt.Errorf("write to %s: %w", s.where, err)
	}
	s.failedSave.CompareAndSwap(failed, 0) // unless another save failed since
	return nil
}

// noteSave records the outcome of a save of about size bytes on SQLite,
// for Ping: a save that failed because the database could not grow or be
// written makes Ping check that as many bytes fit; one that succeeded
// clears that.
func (s *Store) noteSave(size int, err error) {
	if s.dialect != dialectSQLite {
		return
	}
	if err == nil {
		s.failedSave.Store(0)
		return
	}
	if cannotWrite(err) {
		s.failedSave.Store(int64(max(size, 1)))
	}
}

// cannotWrite reports whether err is SQLite's answer to a write that found
// no room or could not be done: a full disk, a failed write, a read-only
// or missing file.
func cannotWrite(err error) bool {
	var sqliteErr *sqlite.Error
	if !errors.As(err, &sqliteErr) {
		return false
	}
	switch sqliteErr.Code() & 0xff {
	case sqliteFull, sqliteIOErr, sqliteReadOnly, sqliteCantOpen:
		return true
	}
	return false
}
