package prompt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/tools"
)

// addTodo adds to env a todo list result of about n bytes, as a run does.
func addTodo(env *tools.Environment, i, n int) {
	env.Add("mcp_todo", "list", []map[string]any{
		{"title": fmt.Sprint("todo ", i), "notes": strings.Repeat("n", n)},
		{"title": fmt.Sprint("todo ", i, "b"), "notes": "short"},
	}, map[string]any{"server": "mcp_todo"})
}

// writeQuery writes the environment of a decision of a query whose own
// result is the newest of env's list, with cache, and checks that it is
// what a decision without a cache writes.
func writeQuery(t *testing.T, env map[string]map[string][]tools.EnvEntry, lim envLimits, cache *FormCache) []byte {
	t.Helper()
	recent := []ResultKey{{"mcp_todo", "list"}}
	var got, want bytes.Buffer
	if _, err := writeEnvironment(&got, env, recent, lim, cache); err != nil {
		t.Fatal(err)
	}
	if _, err := writeEnvironment(&want, env, recent, lim, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("with the cache:\n%s\nwithout:\n%s", got.Bytes(), want.Bytes())
	}
	return got.Bytes()
}

// The digest of an earlier query's result is made once and shown by every
// later query; the query's own result, shown with a preview, is shown as
// a digest once its query is over.
func TestFormCacheKeepsEarlierFormsAcrossQueries(t *testing.T) {
	for _, tc := range []struct {
		name string
		lim  envLimits
		// small says that small earlier results are shown whole, and kept
		// whole by EndQuery.
		small bool
	}{
		{"digests", envLimits{total: 4 << 10, old: 1 << 10}, false},
		{"earlier ones whole", envLimits{total: 64 << 10, old: 32 << 10}, true},
		{"no limit", envLimits{total: -1, old: -1}, true},
		{"old over total", envLimits{total: 1 << 10, old: 2 << 10}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var env tools.Environment
			var cache FormCache
			// digests holds the short forms of earlier results kept
			// after the query before.
			digests := map[int][]byte{}
			reused, keptWhole := 0, 0
			for q := range 6 {
				addTodo(&env, q, 600+100*q)
				snap := env.Snapshot()
				// A query's decisions all see the forms kept.
				writeQuery(t, snap, tc.lim, &cache)
				writeQuery(t, snap, tc.lim, &cache)
				if f := cache.current[entryRef{ResultKey{"mcp_todo", "list"}, q}]; f == nil {
					t.Fatalf("query %d: the query's result has no forms kept", q)
				}
				for i := range q {
					f := cache.old[entryRef{ResultKey{"mcp_todo", "list"}, i}]
					if f == nil {
						continue // not shown
					}
					if bytes.Contains(f.short, []byte("_PREVIEW")) {
						t.Errorf("query %d: earlier result %d has its query's short form: %s", q, i, f.short)
					}
					if d := digests[i]; d != nil {
						if &f.short[0] != &d[0] {
							t.Errorf("query %d: earlier result %d was digested again", q, i)
						}
						reused++
					}
				}
				cache.EndQuery()
				if cache.current != nil {
					t.Fatalf("query %d: EndQuery kept the query's forms", q)
				}
				for i, f := range cache.old {
					if len(f.whole) > len(f.short) && len(f.whole) > maxKeptWhole {
						t.Errorf("query %d: EndQuery kept result %v whole (%d bytes)", q, i, len(f.whole))
					}
					if f.whole != nil {
						keptWhole++
					}
					digests[i.index] = f.short
				}
			}
			if reused == 0 {
				t.Error("no earlier result's forms were reused")
			}
			if tc.small && keptWhole == 0 {
				t.Error("no small earlier result shown whole was kept whole")
			}
		})
	}
}

// A cache that sees another environment, with other entries at the same
// places (restored from the Store, or replaced without dropping the
// cache), shows the new entries, not the forms kept of the old ones.
func TestFormCacheDoesNotReuseAnotherEntrysForms(t *testing.T) {
	lim := envLimits{total: 4 << 10, old: 1 << 10}
	var env tools.Environment
	for i := range 3 {
		addTodo(&env, i, 700)
	}
	addTodo(&env, 3, 100)
	snap := env.Snapshot()
	var cache FormCache
	writeQuery(t, snap, lim, &cache)
	cache.EndQuery()
	if len(cache.old) == 0 {
		t.Fatal("no earlier result's forms kept")
	}

	// A copy of the same environment, as a restore from a snapshot
	// makes it, shares the entries' objects: their forms serve.
	var same tools.Environment
	same.Restore(snap)
	before := map[entryRef][]byte{}
	for ref, f := range cache.old {
		before[ref] = f.short
	}
	writeQuery(t, same.Snapshot(), lim, &cache)
	for ref, short := range before {
		if f := cache.old[ref]; f == nil || &f.short[0] != &short[0] {
			t.Errorf("%v: the same entry was digested again", ref)
		}
	}
	cache.EndQuery()

	// The same environment decoded again from its JSON, equal but not
	// the same entries, and then one whose entries differ.
	js, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	var decoded map[string]map[string][]tools.EnvEntry
	if err := json.Unmarshal(js, &decoded); err != nil {
		t.Fatal(err)
	}
	writeQuery(t, decoded, lim, &cache)
	cache.EndQuery()

	var other tools.Environment
	for i := range 3 {
		other.Add("mcp_todo", "list", []map[string]any{{"renamed": fmt.Sprint("other ", i), "body": strings.Repeat("o", 700)}},
			map[string]any{"server": "mcp_todo"})
	}
	other.Add("mcp_todo", "list", []map[string]any{{"renamed": "newest"}}, nil)
	out := writeQuery(t, other.Snapshot(), lim, &cache)
	if bytes.Contains(out, []byte("notes")) {
		t.Errorf("the environment shows forms of entries it no longer holds:\n%s", out)
	}
}

// Between queries the cache holds the forms of the earlier results the
// last query looked at, not one per result of a long conversation.
func TestFormCacheKeepsWhatTheLastQueryLookedAt(t *testing.T) {
	lim := envLimits{total: 4 << 10, old: 1 << 10}
	var env tools.Environment
	var cache FormCache
	for q := range 50 {
		addTodo(&env, q, 600)
		writeQuery(t, env.Snapshot(), lim, &cache)
		cache.EndQuery()
		// 1 KiB holds five digests, and the list stops at the
		// first that does not fit.
		if len(cache.old) > 6 {
			t.Fatalf("query %d: %d earlier results' forms kept", q, len(cache.old))
		}
	}
	if len(cache.old) == 0 {
		t.Fatal("no earlier result's forms kept")
	}
}
