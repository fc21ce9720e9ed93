package prompt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/tools"
)

// envOf builds an environment the way runs do; adds are (tool, result
// name, object text) in order.
func envOf(adds ...[3]string) map[string]map[string][]tools.EnvEntry {
	var env tools.Environment
	for _, a := range adds {
		env.Add(a[0], a[1], []map[string]any{{"text": a[2]}}, map[string]any{"server": a[0]})
	}
	return env.Snapshot()
}

func TestWriteEnvironmentUnderLimitIsJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]map[string][]tools.EnvEntry
	}{
		{"empty", map[string]map[string][]tools.EnvEntry{}},
		{"a tool without results", map[string]map[string][]tools.EnvEntry{"mcp_todo": {}}},
		{"one result", envOf([3]string{"mcp_todo", "list", "a"})},
		{"several tools and lists", envOf([3]string{"mcp_b", "list", "<b>"}, [3]string{"mcp_a", "x&y", "é"},
			[3]string{"mcp_a", "list", "1"}, [3]string{"mcp_a", "list", "2"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := tools.Marshal(tc.env)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if _, err := writeEnvironment(&b, tc.env, nil, envLimits{total: DefaultMaxEnvironment, old: -1}, nil); err != nil {
				t.Fatal(err)
			}
			if b.String() != string(want) {
				t.Errorf("environment:\n got %s\nwant %s", b.String(), want)
			}
		})
	}
}

func TestWriteEnvironmentCapped(t *testing.T) {
	kb := func(n int) string { return strings.Repeat("y", n<<10) }
	var many [][3]string
	for i := range 2000 {
		many = append(many, [3]string{"mcp_todo", "list", fmt.Sprint("todo number ", i)})
	}
	for _, tc := range []struct {
		name   string
		env    map[string]map[string][]tools.EnvEntry
		recent []ResultKey
		limit  int
		// whole and short are _REF_IDs the prompt must show whole, and
		// in the short form; in lists fragments it must contain.
		whole, short, in []string
	}{
		{
			name: "a huge result",
			env: envOf([3]string{"mcp_todo", "list", "small"},
				[3]string{"mcp_big", "dump", strings.Repeat("x", 10<<20)}),
			recent: []ResultKey{{"mcp_big", "dump"}},
			limit:  64 << 10,
			whole:  []string{"mcp_todo_list_0_0"},
			short:  []string{"mcp_big_dump_0_0"},
			in:     []string{`1 object, 10485`, `bytes left out of this prompt`, `"_PREVIEW":"{\"_REF_ID\":\"mcp_big_dump_0_0\",\"text\":\"xxx`},
		},
		{
			name: "the query's result before older ones",
			env: envOf([3]string{"mcp_a", "list", kb(30)}, [3]string{"mcp_b", "list", kb(30)},
				[3]string{"mcp_z", "list", kb(30)}),
			recent: []ResultKey{{"mcp_z", "list"}},
			limit:  64 << 10,
			whole:  []string{"mcp_z_list_0_0", "mcp_a_list_0_0"},
			short:  []string{"mcp_b_list_0_0"},
		},
		{
			name:   "newest of a list first",
			env:    envOf([3]string{"mcp_a", "list", kb(30)}, [3]string{"mcp_a", "list", kb(30)}, [3]string{"mcp_a", "list", kb(30)}),
			limit:  64 << 10,
			whole:  []string{"mcp_a_list_2_0", "mcp_a_list_1_0"},
			short:  []string{"mcp_a_list_0_0"},
			recent: nil,
		},
		{
			name:   "too many results for short forms",
			env:    envOf(many...),
			recent: []ResultKey{{"mcp_todo", "list"}},
			limit:  4 << 10,
			whole:  []string{"mcp_todo_list_1999_0"},
			in:     []string{"older results left out to keep the prompt short: _REF_IDs mcp_todo_list_0_* to mcp_todo_list_"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if _, err := writeEnvironment(&b, tc.env, tc.recent, envLimits{total: tc.limit, old: -1}, nil); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if len(out) > tc.limit {
				t.Errorf("environment of %d bytes, over the limit of %d", len(out), tc.limit)
			}
			// The offline planner decodes the environment: its shape stays.
			var got map[string]map[string][]tools.EnvEntry
			if err := json.Unmarshal(b.Bytes(), &got); err != nil {
				t.Fatalf("environment does not decode: %v\n%.500s", err, out)
			}
			for tool, byName := range tc.env {
				for name := range byName {
					if len(got[tool][name]) == 0 {
						t.Errorf("list %s/%s is missing", tool, name)
					}
				}
			}
			forms := refForms(got)
			for _, ref := range tc.whole {
				if forms[ref] != "whole" {
					t.Errorf("%s is %q, want whole", ref, forms[ref])
				}
			}
			for _, ref := range tc.short {
				if forms[ref] != "short" {
					t.Errorf("%s is %q, want short", ref, forms[ref])
				}
			}
			for _, s := range tc.in {
				if !strings.Contains(out, s) {
					t.Errorf("environment lacks %s:\n%.1000s", s, out)
				}
			}
		})
	}
}

// refForms tells, for each _REF_ID shown in a prompt's environment,
// whether its object is whole or in the short form.
func refForms(env map[string]map[string][]tools.EnvEntry) map[string]string {
	out := map[string]string{}
	for _, byName := range env {
		for _, entries := range byName {
			for _, e := range entries {
				for _, o := range e.Objects {
					ref, _ := o[tools.RefIDKey].(string)
					if _, short := o[truncatedKey]; short {
						out[ref] = "short"
					} else {
						out[ref] = "whole"
					}
				}
			}
		}
	}
	return out
}

// TestListNote holds a list's note to what Marshal writes of its short
// form, for names that need escaping too.
func TestListNote(t *testing.T) {
	for _, key := range []ResultKey{{"mcp_todo", "list"}, {`we"ird`, "<b>&\u2028é"}, {"t", "\x01"}} {
		l := &promptList{key: key}
		for _, n := range []int{1, 2, 50} {
			refs := fmt.Sprintf("%s_%s_0_*", key.Tool, key.Name)
			if n > 1 {
				refs += fmt.Sprintf(" to %s_%s_%d_*", key.Tool, key.Name, n-1)
			}
			text := fmt.Sprintf("%d older results left out to keep the prompt short: _REF_IDs %s", n, refs)
			want, err := tools.Marshal(shortForm{Objects: []any{map[string]string{truncatedKey: text}}, Metadata: json.RawMessage("{}")})
			if err != nil {
				t.Fatal(err)
			}
			if got := l.note(n); !bytes.Equal(got, want) {
				t.Errorf("note(%d) of %v = %s, want %s", n, key, got, want)
			}
		}
	}
}
