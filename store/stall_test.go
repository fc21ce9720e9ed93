package store

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"hash/fnv"
	"net/url"
	"testing"

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

// advisoryConversationKey is the advisory lock key a conversation's lock
// was before locks were leases, for tests that check none is held.
func advisoryConversationKey(userID, convID string) int64 {
	h := fnv.New64a()
	h.Write([]byte("elysia/conversation\x00"))
	h.Write([]byte(userID))
	h.Write([]byte{0})
	h.Write([]byte(convID))
	return int64(h.Sum64())
}
