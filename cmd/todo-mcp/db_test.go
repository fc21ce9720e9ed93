package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/elysia-go/elysia/internal/testenv"
)

// postgresStore opens a store on ELYSIA_TEST_POSTGRES_URL inside a fresh
// schema (through search_path), dropped when t ends, so tests never see each
// other's rows. It also returns the URL that selects that schema.
func postgresStore(t *testing.T) (*sqlStore, string) {
	t.Helper()
	base := os.Getenv("ELYSIA_TEST_POSTGRES_URL")
	if base == "" {
		testenv.Missing(t, "ELYSIA_TEST_POSTGRES_URL is not set")
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := admin.Close(); err != nil {
			t.Errorf("close admin connection: %v", err)
		}
	})
	b := make([]byte, 6)
	rand.Read(b)
	schema := "todo_test_" + hex.EncodeToString(b)
	if _, err := admin.ExecContext(t.Context(), "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("ELYSIA_TEST_POSTGRES_URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	st, err := openPostgres(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return st, u.String()
}

func TestStores(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T) *sqlStore
	}{
		{"sqlite", func(t *testing.T) *sqlStore {
			t.Helper()
			st, err := openSQLite(t.Context(), filepath.Join(t.TempDir(), "sub", "dir", "todos.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := st.Close(); err != nil {
					t.Errorf("close store: %v", err)
				}
			})
			return st
		}},
		{"postgres", func(t *testing.T) *sqlStore {
			t.Helper()
			st, _ := postgresStore(t)
			return st
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.open(t)
			ctx := t.Context()
			due := "2026-04-01"
			a, err := st.Create(ctx, newTodo{Title: "Plan 100% trip", Description: "Book_flights", Priority: 2, Tags: []string{"travel", " ", "Travel"}, DueDate: &due})
			if err != nil {
				t.Fatal(err)
			}
			if a.ID < 1 || len(a.Tags) != 1 || a.Status != statusActive || deref(a.DueDate) != due {
				t.Fatalf("created %+v", a)
			}
			b, err := st.Create(ctx, newTodo{Title: "Call mum", Priority: 5})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []struct {
				f    filter
				want int
			}{
				{filter{}, 2},
				{filter{Query: "100%"}, 1},
				{filter{Query: "k_f"}, 1},
				{filter{Query: "ok%"}, 0},
				{filter{Query: "o_k"}, 0},
				{filter{Query: "MUM"}, 1},
				{filter{Tags: []string{"TRAVEL"}}, 1},
				{filter{DueBefore: due, DueAfter: due}, 1},
				{filter{Priority: 5, Status: statusActive}, 1},
			} {
				got, err := st.List(ctx, f.f)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != f.want {
					t.Errorf("List(%+v) = %d todos, want %d", f.f, len(got), f.want)
				}
			}
			done := statusCompleted
			tags := []string{}
			u, err := st.Update(ctx, b.ID, patch{Status: &done, Tags: &tags})
			if err != nil || u.Status != statusCompleted || u.Title != "Call mum" {
				t.Fatalf("update: %+v, %v", u, err)
			}
			if _, err := st.Update(ctx, 9999, patch{Status: &done}); !errors.Is(err, errNotFound) {
				t.Errorf("update of a missing todo: %v, want errNotFound", err)
			}
			if _, err := st.Delete(ctx, a.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Delete(ctx, a.ID); !errors.Is(err, errNotFound) {
				t.Errorf("second delete: %v, want errNotFound", err)
			}

			// Many concurrent writers all succeed with distinct ids.
			const n = 100
			var mu sync.Mutex
			ids := map[int64]bool{}
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					td, err := st.Create(ctx, newTodo{Title: fmt.Sprint("load ", i), Priority: 3})
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						t.Errorf("create %d: %v", i, err)
						return
					}
					ids[td.ID] = true
				})
			}
			wg.Wait()
			if len(ids) != n {
				t.Errorf("%d distinct ids, want %d", len(ids), n)
			}
		})
	}
}
