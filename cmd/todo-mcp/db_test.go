package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/elysia-go/elysia/internal/testenv"
)

// postgresStore opens a store in a fresh schema of the test database
// (testenv.PostgresDSN), dropped when t ends, so tests never see each
// other's rows. It also returns the URL that selects that schema.
func postgresStore(t *testing.T) (*sqlStore, string) {
	t.Helper()
	dsn := testenv.PostgresDSN(t)
	st, err := openPostgres(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return st, dsn
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
