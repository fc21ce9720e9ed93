package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
)

// newDSN returns the data source name of a fresh, empty database that is
// removed when the test ends.
type newDSN func(t *testing.T) string

// backends are the databases every behaviour runs against.
var backends = []struct {
	name string
	dsn  newDSN
}{
	{"sqlite", sqliteTestDSN},
	{"postgres", func(t *testing.T) string { t.Helper(); return testenv.PostgresDSN(t) }},
}

// behaviours is the suite run against each backend.
var behaviours = []struct {
	name string
	run  func(t *testing.T, dsn newDSN)
}{
	{"round trip", testRoundTrip},
	{"large blobs", testLargeBlobs},
	{"users", testUsers},
	{"save conversation keeps query state", testSaveConversationKeepsQueryState},
	{"save query is atomic", testSaveQueryAtomic},
	{"events in order", testEventsInOrder},
	{"list newest first", testListNewestFirst},
	{"delete", testDelete},
	{"user isolation", testUserIsolation},
	{"invalid input", testInvalidInput},
	{"closed store", testClosedStore},
	{"migration is idempotent", testMigrationIdempotent},
	{"concurrent save query", testConcurrentSaveQuery},
	{"two replicas share data", testReplicasShareData},
	{"lock serialises", testLockSerialises},
	{"lock honours ctx", testLockHonoursCtx},
	{"lock keys are independent", testLockKeysIndependent},
	{"lock across replicas", testLockAcrossReplicas},
	{"feedback", testFeedback},
	{"user configs", testUserConfigs},
	{"user configs, defaults saved at once", testUserConfigsConcurrentDefaults},
	{"user config in force", testUserConfigInForce},
	{"turns and events are trimmed", testTrim},
	{"first schema's blobs become a turn", testMigrateBlobs},
	{"events saved a row each replay with a query's packed ones", testMigrateEvents},
	{"a retried save writes once", testRetriedSave},
	{"turns get keys", testMigrateTurnKeys},
	{"reads see every writer", testReadsSeeEveryWriter},
}

func TestStore(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range behaviours {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.run(t, b.dsn)
				})
			}
		})
	}
}

func sqliteTestDSN(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "elysia.db")
}

// openStore opens dsn and closes the store when t ends.
func openStore(t *testing.T, dsn string) *Store {
	t.Helper()
	s, err := Open(t.Context(), dsn, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// fakeClock returns a clock that moves one second forward at every reading.
func fakeClock() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

func testMigrationIdempotent(t *testing.T, newDSN newDSN) {
	t.Helper()
	dsn := newDSN(t)
	// Replicas starting at once, then a restart.
	if err := openConcurrently(t, dsn, 4); err != nil {
		t.Fatalf("concurrent Open: %v", err)
	}
	s := openStore(t, dsn)
	var n, v int
	if err := s.db.QueryRowContext(t.Context(), "SELECT COUNT(*), MAX(version) FROM schema_version").Scan(&n, &v); err != nil {
		t.Fatal(err)
	}
	if n != len(migrations) || v != len(migrations) {
		t.Errorf("schema_version has %d rows, max %d; want %d and %d", n, v, len(migrations), len(migrations))
	}
}

func testClosedStore(t *testing.T, newDSN newDSN) {
	t.Helper()
	s, err := Open(t.Context(), newDSN(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	ctx := t.Context()
	if _, err := s.EnsureUser(ctx, "alice"); !errors.Is(err, ErrClosed) {
		t.Errorf("EnsureUser after Close: got %v, want ErrClosed", err)
	}
	if _, err := s.GetConversation(ctx, "alice", "c1"); !errors.Is(err, ErrClosed) {
		t.Errorf("GetConversation after Close: got %v, want ErrClosed", err)
	}
	if _, err := s.Lock(ctx, "alice", "c1"); !errors.Is(err, ErrClosed) {
		t.Errorf("Lock after Close: got %v, want ErrClosed", err)
	}
	if err := s.Ping(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Ping after Close: got %v, want ErrClosed", err)
	}
}

func TestOpenUnreachablePostgres(t *testing.T) {
	port := testenv.FreePort(t)
	dsn := fmt.Sprintf("postgres://elysia:s3cret@127.0.0.1:%d/elysia?sslmode=disable&connect_timeout=5", port)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := Open(ctx, dsn, nil)
	if err == nil {
		_ = s.Close() // the test fails anyway
		t.Fatal("Open of a PostgreSQL that is not there succeeded")
	}
	msg := err.Error()
	want := fmt.Sprintf("connect to postgres://127.0.0.1:%d/elysia", port)
	if !strings.Contains(msg, want) {
		t.Errorf("error %q does not contain %q", msg, want)
	}
	if strings.Contains(msg, "s3cret") {
		t.Errorf("error %q shows the password", msg)
	}
}

func TestOpenDSN(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, dsn string
		file      string // the SQLite file Open must create
	}{
		{"path", filepath.Join(dir, "a", "x.db"), filepath.Join(dir, "a", "x.db")},
		{"sqlite URL", "sqlite://" + filepath.Join(dir, "b", "x.db"), filepath.Join(dir, "b", "x.db")},
		{"file URI", "file:" + filepath.Join(dir, "c", "x.db") + "?cache=private", filepath.Join(dir, "c", "x.db")},
		{"memory", ":memory:", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t, tc.dsn)
			if _, err := s.EnsureUser(t.Context(), "alice"); err != nil {
				t.Fatalf("EnsureUser: %v", err)
			}
			if tc.file != "" {
				if _, err := os.Stat(tc.file); err != nil {
					t.Errorf("database file: %v", err)
				}
			}
		})
	}
}

func TestOpenDefaultPath(t *testing.T) {
	t.Chdir(t.TempDir())
	s := openStore(t, "")
	if _, err := s.EnsureUser(t.Context(), "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(DefaultSQLitePath); err != nil {
		t.Errorf("default database: %v", err)
	}
	var mode string
	if err := s.db.QueryRowContext(t.Context(), "PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Errorf("journal_mode = %q, want wal", mode)
	}
}

func TestOpenUnsupportedScheme(t *testing.T) {
	_, err := Open(t.Context(), "mysql://root@127.0.0.1/elysia", nil)
	if err == nil || !strings.Contains(err.Error(), `unsupported database URL scheme "mysql"`) {
		t.Errorf("Open(mysql://...) error = %v, want unsupported scheme", err)
	}
}

// TestConcurrentFirstOpens: four processes opening one new SQLite file at
// once (replicas starting together, or a restart while the previous
// process is still exiting) all connect and migrate. The switch to WAL and
// the first reads of the WAL index can answer SQLITE_BUSY at once, without
// the busy handler, so Open waits that out itself.
func TestConcurrentFirstOpens(t *testing.T) {
	for range 40 {
		if err := openConcurrently(t, sqliteTestDSN(t), 4); err != nil {
			t.Fatalf("concurrent first Open: %v", err)
		}
	}
}

// openConcurrently opens and closes dsn from n goroutines at once, as n
// processes starting together would, and returns their errors joined.
func openConcurrently(t *testing.T, dsn string, n int) error {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range errs {
		wg.Go(func() {
			s, err := Open(t.Context(), dsn, nil)
			if err == nil {
				err = s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
