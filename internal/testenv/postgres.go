package testenv

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"
)

// postgresEnv names the database the PostgreSQL tests use
// (scripts/postgres-test.sh starts one and sets it).
const postgresEnv = "ELYSIA_TEST_POSTGRES_URL"

// PostgresURL returns the URL of the test database, $ELYSIA_TEST_POSTGRES_URL.
// It skips tb in -short mode, and when the variable is not set (Missing:
// fails under CI=true).
func PostgresURL(tb testing.TB) string {
	tb.Helper()
	Integration(tb)
	base := os.Getenv(postgresEnv)
	if base == "" {
		Missing(tb, "%s is not set (run scripts/postgres-test.sh)", postgresEnv)
	}
	return base
}

// PostgresDSN creates a schema of its own in the test database
// (PostgresURL), drops it when tb ends, and returns a URL whose search_path
// is that schema, so that tests never see each other's rows. It opens the
// database with the "pgx" database/sql driver, which the test binary must
// register (the store package and cmd/todo-mcp do).
func PostgresDSN(tb testing.TB) string {
	tb.Helper()
	base := PostgresURL(tb)
	admin, err := sql.Open("pgx", base)
	if err != nil {
		tb.Fatal(err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "test_" + hex.EncodeToString(b[:])
	if _, err := admin.ExecContext(tb.Context(), "CREATE SCHEMA "+schema); err != nil {
		_ = admin.Close() // best effort: the create error is the one to report
		tb.Fatalf("create schema in the %s database: %v", postgresEnv, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
		if err := admin.Close(); err != nil {
			tb.Errorf("close admin connection: %v", err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatalf("%s: %v", postgresEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
