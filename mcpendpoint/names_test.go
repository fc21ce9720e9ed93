package mcpendpoint

import (
	"strings"
	"testing"
)

func TestExposedName(t *testing.T) {
	for _, tt := range []struct{ prefix, sep, tool, want string }{
		{"todo", "__", "create_todo", "todo__create_todo"},
		{"", "__", "create_todo", "create_todo"},
		{"my server", "__", "do.it/now", "my_server__do_it_now"},
		{"é", "-", "x", "_-x"},
	} {
		if got := exposedName(tt.prefix, tt.sep, tt.tool); got != tt.want {
			t.Errorf("exposedName(%q, %q, %q) = %q, want %q", tt.prefix, tt.sep, tt.tool, got, tt.want)
		}
	}
	long := strings.Repeat("a", 70)
	a, b := exposedName("s", "__", long), exposedName("s", "__", long+"b")
	if len(a) != MaxNameLen || len(b) != MaxNameLen || a == b || !strings.HasPrefix(a, "s__aaaa") {
		t.Errorf("long names %q and %q: want %d characters each, kept start, told apart", a, b, MaxNameLen)
	}
	if again := exposedName("s", "__", long); again != a {
		t.Errorf("cut name not stable: %q then %q", a, again)
	}
}

func TestDedupe(t *testing.T) {
	taken := map[string]bool{}
	for i, want := range []struct {
		name  string
		moved bool
	}{{"x", false}, {"x_2", true}, {"x_3", true}} {
		got, moved := dedupe("x", taken)
		if got != want.name || moved != want.moved {
			t.Errorf("dedupe #%d = %q, %v; want %q, %v", i+1, got, moved, want.name, want.moved)
		}
	}
	full := strings.Repeat("z", MaxNameLen)
	taken[full] = true
	if got, _ := dedupe(full, taken); len(got) != MaxNameLen || got == full {
		t.Errorf("dedupe of a 64-character name = %q", got)
	}
}

func TestClosestNames(t *testing.T) {
	got := closestNames("todo__create", []string{"b__delete", "todo__create_todo", "a__x"}, 2)
	if len(got) != 2 || got[0] != "todo__create_todo" {
		t.Errorf("closestNames = %v", got)
	}
}
