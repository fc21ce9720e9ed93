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
	{
		// Bounded storage per conversation (issue 12): the history and
		// environment move out of the conversation's row, which every query
		// rewrote whole, into a turn per query, appended; a turn's results
		// and an event are kept whole until a later query trims them to the
		// digests stored beside them. The old blobs become each
		// conversation's first turn (their results stay whole until the
		// service gives them digests on the next load).
		sqlite:   turnsMigration("INTEGER"),
		postgres: turnsMigration("BIGINT"),
	},
	{
		// Users' named configs (Elysia's Settings page): at most one per
		// user is the default, which the user's queries use.
		sqlite:   userConfigsMigration("INTEGER"),
		postgres: userConfigsMigration("BIGINT"),
	},
	{
		// Web sign-ins between their start and their callback, sealed, so
		// that the callback may reach any replica (see Vault.TakePending).
		sqlite:   pendingMigration("INTEGER"),
		postgres: pendingMigration("BIGINT"),
	},
	{
		// Each pending sign-in names its user (hashed), so that the
		// sign-ins one user may keep waiting are capped (issue 16). Rows
		// from before have none: they expire within minutes.
		sqlite:   pendingUserMigration,
		postgres: pendingUserMigration,
	},
	{
		// Messages between replicas (see Bus), on PostgreSQL only: each
		// lives a minute, so the table is unlogged (not written to the
		// WAL, emptied by a crash, not replicated), which is what a
		// message nobody waits for any more needs.
		postgres: []string{
			`CREATE UNLOGGED TABLE relay_messages (
				id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
				sent_at BIGINT NOT NULL,
				body BYTEA NOT NULL)`,
			`CREATE INDEX relay_messages_sent ON relay_messages (sent_at)`,
		},
	},
	{
		// Conversation locks as leases, on PostgreSQL only (see lease.go):
		// they replace session advisory locks, which pinned a connection
		// per running query.
		postgres: leaseMigration,
	},
	{
		// The aggregate MCP endpoint's HTTP sessions (see
		// Store.PutMCPSession), so that any replica serves any of them.
		sqlite:   mcpSessionsMigration("INTEGER"),
		postgres: mcpSessionsMigration("BIGINT"),
	},
	{
		// Once a unique index on each conversation's turns by query, which
		// refused the next query of a client that reuses its query ids;
		// never released. Migration 13 drops it where it was made.
	},
	{
		// The replicas' liveness leases (see Store.RenewReplica): a
		// replica is gone when its lease expired, not when it is slow.
		sqlite:   replicaLeasesMigration(false),
		postgres: replicaLeasesMigration(true),
	},
	{
		// A turn is keyed by the save that wrote it (see Turn.Key).
		sqlite:   saveKeyMigration,
		postgres: saveKeyMigration,
	},
	{
		// Each MCP server's pinned tool definitions (see Store.ToolPins),
		// shared by every replica.
		sqlite:   toolPinsMigration("INTEGER"),
		postgres: toolPinsMigration("BIGINT"),
	},
	{
		// The aggregate MCP endpoint's tasks (Tasks extension; see
		// Store.CreateMCPTask), so that any replica reports on any.
		sqlite:   mcpTasksMigration("INTEGER"),
		postgres: mcpTasksMigration("BIGINT"),
	},
	{
		// A task keeps its client's answers until the replica running
		// it takes them, and a revision its moves compare (see
		// Store.SwapMCPTask).
		sqlite:   mcpTaskAnswersMigration("INTEGER"),
		postgres: mcpTaskAnswersMigration("BIGINT"),
	},
	{
		// A query's events are saved in one row (see pack): rows from
		// before hold one event each.
		sqlite:   packedEventsMigration,
		postgres: packedEventsMigration,
	},
}

// packedEventsMigration is the seventeenth migration. A row of a query's
// events keeps them all in envelopes (a JSON array) and, until a later
// query trims them, the array it trims them to in digests; its envelope
// and digest are the query's last event's, so that a replica from before
// (a rolling upgrade) reads the row as that one event and trims it as
// its own, never as an array. A row of one event has NULL envelopes.
var packedEventsMigration = []string{
	`ALTER TABLE events ADD COLUMN envelopes TEXT`,
	`ALTER TABLE events ADD COLUMN digests TEXT`,
	`CREATE INDEX events_packed_whole ON events (user_id, conversation_id) WHERE digests IS NOT NULL`,
}

// mcpTaskAnswersMigration is the sixteenth migration; integer is the
// dialect's 64-bit integer type.
func mcpTaskAnswersMigration(integer string) []string {
	return []string{
		`ALTER TABLE mcp_tasks ADD COLUMN answers TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE mcp_tasks ADD COLUMN revision ` + integer + ` NOT NULL DEFAULT 0`,
	}
}

// mcpTasksMigration is the fifteenth migration; integer is the dialect's
// 64-bit integer type. A task id is a bearer of the task: it is kept as
// its SHA-256, and so is its user.
func mcpTasksMigration(integer string) []string {
	return []string{
		`CREATE TABLE mcp_tasks (
			id_hash TEXT PRIMARY KEY,
			user_hash TEXT NOT NULL,
			status TEXT NOT NULL,
			status_message TEXT NOT NULL DEFAULT '',
			result TEXT NOT NULL DEFAULT '',
			input_requests TEXT NOT NULL DEFAULT '',
			created_at ` + integer + ` NOT NULL,
			updated_at ` + integer + ` NOT NULL,
			expires_at ` + integer + ` NOT NULL)`,
		`CREATE INDEX mcp_tasks_expiry ON mcp_tasks (expires_at)`,
	}
}

// toolPinsMigration is the fourteenth migration; integer is the dialect's
// 64-bit integer type.
func toolPinsMigration(integer string) []string {
	return []string{
		`CREATE TABLE tool_pins (
			server TEXT NOT NULL,
			tool TEXT NOT NULL,
			hash TEXT NOT NULL,
			definition TEXT NOT NULL,
			pinned_at ` + integer + ` NOT NULL,
			from_copy TEXT NOT NULL DEFAULT '',
			PRIMARY KEY (server, tool))`,
	}
}

// saveKeyMigration is the thirteenth migration, the same in both
// dialects: a turn keeps the key of the save that wrote it (see
// Turn.Key), unique in its conversation, so that a save retried after its
// commit went through writes nothing (issue 24). It drops the index by
// query of an eleventh migration that was never released.
var saveKeyMigration = []string{
	`DROP INDEX IF EXISTS turns_by_query`,
	`ALTER TABLE turns ADD COLUMN save_key TEXT NOT NULL DEFAULT ''`,
	`CREATE UNIQUE INDEX turns_by_save_key ON turns (user_id, conversation_id, save_key) WHERE save_key <> ''`,
}

// mcpSessionsMigration is the tenth migration; integer is the dialect's
// 64-bit integer type. A session id, a bearer of the session, is kept as
// its SHA-256, and so is its user.
func mcpSessionsMigration(integer string) []string {
	return []string{
		`CREATE TABLE mcp_sessions (
			id_hash TEXT PRIMARY KEY,
			user_hash TEXT NOT NULL,
			protocol_version TEXT NOT NULL,
			init TEXT NOT NULL,
			log_level TEXT NOT NULL DEFAULT '',
			created_at ` + integer + ` NOT NULL,
			seen_at ` + integer + ` NOT NULL)`,
		`CREATE INDEX mcp_sessions_seen ON mcp_sessions (seen_at)`,
	}
}

// pendingUserMigration is the seventh migration, the same in both
// dialects.
var pendingUserMigration = []string{
	`ALTER TABLE oauth_pending ADD COLUMN user_hash TEXT NOT NULL DEFAULT ''`,
	`CREATE INDEX oauth_pending_user ON oauth_pending (user_hash)`,
}

// pendingMigration is the sixth migration; integer is the dialect's 64-bit
// integer type. A sign-in's state is kept as its SHA-256, never in clear.
func pendingMigration(integer string) []string {
	return []string{
		`CREATE TABLE oauth_pending (
			state_hash TEXT PRIMARY KEY,
			sealed TEXT NOT NULL,
			expires_at ` + integer + ` NOT NULL)`,
		`CREATE INDEX oauth_pending_expiry ON oauth_pending (expires_at)`,
	}
}

// userConfigsMigration is the fifth migration; integer is the dialect's
// 64-bit integer type.
func userConfigsMigration(integer string) []string {
	return []string{
		`CREATE TABLE user_configs (
			user_id TEXT NOT NULL,
			id TEXT NOT NULL,
			name TEXT NOT NULL,
			is_default ` + integer + ` NOT NULL DEFAULT 0,
			body TEXT NOT NULL,
			updated_at ` + integer + ` NOT NULL,
			PRIMARY KEY (user_id, id))`,
		`CREATE UNIQUE INDEX user_configs_default ON user_configs (user_id) WHERE is_default = 1`,
	}
}

// turnsMigration is the third migration; integer is the dialect's 64-bit
// integer type.
func turnsMigration(integer string) []string {
	return []string{
		`ALTER TABLE conversations ADD COLUMN version ` + integer + ` NOT NULL DEFAULT 0`,
		`ALTER TABLE conversations ADD COLUMN turns ` + integer + ` NOT NULL DEFAULT 0`,
		`CREATE TABLE turns (
			user_id TEXT NOT NULL,
			conversation_id TEXT NOT NULL,
			seq ` + integer + ` NOT NULL,
			query_id TEXT NOT NULL,
			messages TEXT NOT NULL,
			results TEXT,
			digests TEXT,
			PRIMARY KEY (user_id, conversation_id, seq),
			FOREIGN KEY (user_id, conversation_id) REFERENCES conversations (user_id, id) ON DELETE CASCADE)`,
		// The turns and events a save may trim: few per conversation.
		`CREATE INDEX turns_whole ON turns (user_id, conversation_id, seq)
			WHERE results IS NOT NULL AND digests IS NOT NULL`,
		`ALTER TABLE events ADD COLUMN digest TEXT`,
		`CREATE INDEX events_whole ON events (user_id, conversation_id) WHERE digest IS NOT NULL`,
		`INSERT INTO turns (user_id, conversation_id, seq, query_id, messages, results, digests)
			SELECT user_id, id, 1, '',
				CASE WHEN history IS NULL OR history = 'null' THEN '[]' ELSE history END,
				CASE WHEN environment IS NULL OR environment IN ('{}', 'null') THEN NULL ELSE environment END,
				NULL
			FROM conversations
			WHERE (history IS NOT NULL AND history NOT IN ('[]', 'null'))
				OR (environment IS NOT NULL AND environment NOT IN ('{}', 'null'))`,
		`UPDATE conversations SET turns = 1
			WHERE EXISTS (SELECT 1 FROM turns t WHERE t.user_id = conversations.user_id AND t.conversation_id = conversations.id)`,
		`UPDATE conversations SET history = NULL, environment = NULL`,
	}
}

// migrate brings the schema to the latest version. It is idempotent. On
// PostgreSQL it holds an advisory lock for the whole migration; on SQLite the
// immediate transaction serialises it.
func (s *Store) migrate(ctx context.Context) error { return s.migrateTo(ctx, len(migrations)) }

// migrateTo brings the schema to version target (tests start from an older
// one to check a migration).
func (s *Store) migrateTo(ctx context.Context, target int) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	// Close returns conn to the pool; it fails only if conn is already closed.
	defer func() { _ = conn.Close() }()
	if s.dialect == dialectPostgres {
		// A migration, and the wait for another replica's, may take longer
		// than the statement_timeout of ordinary calls: ctx bounds them.
		if _, err := conn.ExecContext(ctx, `SET statement_timeout = 0`); err != nil {
			discard(conn)
			return fmt.Errorf("lift statement timeout for migration: %w", err)
		}
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, migrationLockKey); err != nil {
			discard(conn)
			return fmt.Errorf("take migration lock: %w", err)
		}
		defer func() {
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if _, err := conn.ExecContext(uctx, `SELECT pg_advisory_unlock($1)`, migrationLockKey); err != nil {
				discard(conn) // closing the session releases the lock
				return
			}
			if _, err := conn.ExecContext(uctx, `RESET statement_timeout`); err != nil {
				discard(conn) // a session without its timeout must not go back to the pool
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
	for v := current; v < target; v++ {
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
	if current < target {
		s.logger.InfoContext(ctx, "schema migrated", "from_version", current, "to_version", target)
	}
	return nil
}

// discard closes conn's underlying connection instead of returning it to
// the pool, so that a PostgreSQL session in an unknown state (a lock that may
// or may not be held) ends and the server releases its session locks.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
}
