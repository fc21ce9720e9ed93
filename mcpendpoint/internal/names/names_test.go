package names

import (
	"strings"
	"testing"
)

func TestExposed(t *testing.T) {
	for _, tt := range []struct{ prefix, sep, tool, want string }{
		{"todo", "__", "create_todo", "todo__create_todo"},
		{"", "__", "create_todo", "create_todo"},
		{"my server", "__", "do.it/now", "my_server__do_it_now"},
		{"é", "-", "x", "_-x"},
	} {
		if got := Exposed(tt.prefix, tt.sep, tt.tool); got != tt.want {
			t.Errorf("Exposed(%q, %q, %q) = %q, want %q", tt.prefix, tt.sep, tt.tool, got, tt.want)
		}
	}
	long := strings.Repeat("a", 70)
	a, b := Exposed("s", "__", long), Exposed("s", "__", long+"b")
	if len(a) != MaxLen || len(b) != MaxLen || a == b || !strings.HasPrefix(a, "s__aaaa") {
		t.Errorf("long names %q and %q: want %d characters each, kept start, told apart", a, b, MaxLen)
	}
	if again := Exposed("s", "__", long); again != a {
		t.Errorf("cut name not stable: %q then %q", a, again)
	}
}

func TestDedupe(t *testing.T) {
	taken := map[string]bool{}
	for i, want := range []struct {
		name  string
		moved bool
	}{{"x", false}, {"x_2", true}, {"x_3", true}} {
		got, moved := Dedupe("x", taken)
		if got != want.name || moved != want.moved {
			t.Errorf("Dedupe #%d = %q, %v; want %q, %v", i+1, got, moved, want.name, want.moved)
		}
	}
	full := strings.Repeat("z", MaxLen)
	taken[full] = true
	if got, _ := Dedupe(full, taken); len(got) != MaxLen || got == full {
		t.Errorf("Dedupe of a 64-character name = %q", got)
	}
}

func TestClosest(t *testing.T) {
	got := Closest("todo__create", []string{"b__delete", "todo__create_todo", "a__x"}, 2)
	if len(got) != 2 || got[0] != "todo__create_todo" {
		t.Errorf("Closest = %v", got)
	}
}

// TestClosestTransposed: a swap of two letters is one edit (textdist).
func TestClosestTransposed(t *testing.T) {
	got := Closest("todo__ab", []string{"todo__axby", "todo__ba"}, 1) // 2 and 1 edits (2 and 2 without the swap)
	if len(got) != 1 || got[0] != "todo__ba" {
		t.Errorf("Closest = %v; want [todo__ba]", got)
	}
}
