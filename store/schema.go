package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"time"
)

// migrationLockKey is the PostgreSQL advisory lock key held while migrating,
// so that replicas starting together do not race to create the tables. It
// spells "elysia" followed by 1.
const migrationLockKey int64 = 0x656c79736961_0001

// migration is one step of the schema, in both dialects.
type migration struct {
	sqlite   []string
	postgres []string
}

// migrations are applied in order; migrations[i] brings the schema to
// version i+1. Append only: never edit a migration that has shipped.
var migrations = []migration{
	{
		sqlite: []string{
			`CREATE TABLE users (
				id TEXT PRIMARY KEY,
				created_at INTEGER NOT NULL,
				config TEXT)`,
			`CREATE TABLE conversations (
				user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
				id TEXT NOT NULL,
				title TEXT NOT NULL,
				init_mode TEXT NOT NULL,
				tree_ops TEXT,
				history TEXT,
				environment TEXT,
				created_at INTEGER NOT NULL,
				updated_at INTEGER NOT NULL,
				PRIMARY KEY (user_id, id))`,
			`CREATE INDEX conversations_by_update ON conversations (user_id, updated_at DESC)`,
			`CREATE TABLE events (
				seq INTEGER PRIMARY KEY AUTOINCREMENT,
				user_id TEXT NOT NULL,
				conversation_id TEXT NOT NULL,
				query_id TEXT NOT NULL,
				envelope TEXT NOT NULL,
				FOREIGN KEY (user_id, conversation_id) REFERENCES conversations (user_id, id) ON DELETE CASCADE)`,
			`CREATE INDEX events_by_conversation ON events (user_id, conversation_id, seq)`,
		},
		postgres: []string{
			`CREATE TABLE users (
				id TEXT PRIMARY KEY,
				created_at BIGINT NOT NULL,
				config TEXT)`,
			`CREATE TABLE conversations (
				user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
				id TEXT NOT NULL,
				title TEXT NOT NULL,
				init_mode TEXT NOT NULL,
				tree_ops TEXT,
				history TEXT,
				environment TEXT,
				created_at BIGINT NOT NULL,
				updated_at BIGINT NOT NULL,
				PRIMARY KEY (user_id, id))`,
			`CREATE INDEX conversations_by_update ON conversations (user_id, updated_at DESC)`,
			`CREATE TABLE events (
				seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
				user_id TEXT NOT NULL,
				conversation_id TEXT NOT NULL,
				query_id TEXT NOT NULL,
				envelope TEXT NOT NULL,
				FOREIGN KEY (user_id, conversation_id) REFERENCES conversations (user_id, id) ON DELETE CASCADE)`,
			`CREATE INDEX events_by_conversation ON events (user_id, conversation_id, seq)`,
		},
	},
	{
		// Feedback on answers (Elysia's /feedback routes): one rating per
		// query, kept when its conversation is deleted, as Elysia keeps it.
		sqlite: []string{
			`CREATE TABLE feedback (
				user_id TEXT NOT NULL,
				conversation_id TEXT NOT NULL,
				query_id TEXT NOT NULL,
				rating INTEGER NOT NULL,
				created_at INTEGER NOT NULL,
				PRIMARY KEY (user_id, conversation_id, query_id))`,
		},
		postgres: []string{
			`CREATE TABLE feedback (
				user_id TEXT NOT NULL,
				conversation_id TEXT NOT NULL,
				query_id TEXT NOT NULL,
				rating INTEGER NOT NULL,
				created_at BIGINT NOT NULL,
				PRIMARY KEY (user_id, conversation_id, query_id))`,
		},
	},
	{
		// Users' OAuth tokens and secrets, sealed (issue 9; see Vault).
		sqlite:   vaultMigration("INTEGER"),
		postgres: vaultMigration("BIGINT"),
	},
}

// migrate brings the schema to the latest version. It is idempotent. On
// PostgreSQL it holds an advisory lock for the whole migration; on SQLite the
// immediate transaction serialises it.
func (s *Store) migrate(ctx context.Context) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	// Close returns conn to the pool; it fails only if conn is already closed.
	defer func() { _ = conn.Close() }()
	if s.dialect == dialectPostgres {
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, migrationLockKey); err != nil {
			discard(conn)
			return fmt.Errorf("take migration lock: %w", err)
		}
		defer func() {
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if _, err := conn.ExecContext(uctx, `SELECT pg_advisory_unlock($1)`, migrationLockKey); err != nil {
				discard(conn) // closing the session releases the lock
			}
		}()
	}

	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // sql.ErrTxDone after Commit
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return err
	}
	var current int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&current); err != nil {
		return err
	}
	if current > len(migrations) {
		return fmt.Errorf("database schema version %d is newer than this program knows (%d): upgrade the program", current, len(migrations))
	}
	for v := current; v < len(migrations); v++ {
		stmts := migrations[v].sqlite
		if s.dialect == dialectPostgres {
			stmts = migrations[v].postgres
		}
		for _, stmt := range stmts {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("version %d: %w", v+1, err)
			}
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO schema_version (version) VALUES (?)`), v+1); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if current < len(migrations) {
		s.logger.InfoContext(ctx, "schema migrated", "from_version", current, "to_version", len(migrations))
	}
	return nil
}

// discard closes conn's underlying connection instead of returning it to
// the pool, so that a PostgreSQL session in an unknown state (a lock that may
// or may not be held) ends and the server releases its session locks.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
}
