package mcpregistry

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// TestFind: each word is one registry search; a server is kept when its
// name, title or description holds every word, once, at most limit.
func TestFind(t *testing.T) {
	f := testenv.NewFakeRegistry(t,
		`{"name": "io.github.x/weather", "version": "1.0.0", "description": "Forecasts by city"}`,
		`{"name": "io.github.x/city-maps", "version": "1.0.0", "description": "Maps"}`,
		`{"name": "io.github.x/weather-city", "version": "2.0.0", "description": "Both", "remotes": [{"type": "sse", "url": "https://h/sse"}],
			"packages": [{"registryType": "npm", "identifier": "a", "transport": {"type": "stdio"}}, {"registryType": "npm", "identifier": "b", "transport": {"type": "stdio"}}]}`,
	)
	c := newClient(t, f.URL, nil)
	names := func(recs []Record) []string {
		var out []string
		for _, r := range recs {
			out = append(out, r.Server.Name)
		}
		return out
	}
	for _, tc := range []struct {
		words []string
		limit int
		want  []string
	}{
		{nil, 0, []string{"io.github.x/weather", "io.github.x/city-maps", "io.github.x/weather-city"}},
		{[]string{"weather", "City"}, 0, []string{"io.github.x/weather", "io.github.x/weather-city"}},
		{[]string{"weather", "city"}, 1, []string{"io.github.x/weather"}},
		{[]string{"maps"}, 0, []string{"io.github.x/city-maps"}},
	} {
		got, err := c.Find(t.Context(), tc.words, tc.limit)
		if err != nil || !slices.Equal(names(got), tc.want) {
			t.Errorf("Find(%q, %d) = %q, %v; want %q", tc.words, tc.limit, names(got), err, tc.want)
		}
	}
	got, err := c.Find(t.Context(), []string{"weather-city"}, 0)
	if err != nil || len(got) != 1 {
		t.Fatalf("Find(weather-city) = %+v, %v", got, err)
	}
	if runs := got[0].Server.Runs(); !slices.Equal(runs, []string{"remote", "npm"}) {
		t.Errorf("Runs() = %q; want remote, npm", runs)
	}
	n := len(f.Requests())
	for _, bad := range [][]string{{"a", "b", "c", "d", "e", "f"}, {"x\x1b[2J"}} {
		if _, err := c.Find(t.Context(), bad, 0); !errors.Is(err, ErrBadSearch) {
			t.Errorf("Find(%q) = %v; want ErrBadSearch", bad, err)
		}
	}
	if len(f.Requests()) != n {
		t.Errorf("a refused search asked the registry: %q", f.Requests()[n:])
	}
}

// TestAddTo: an entry is appended keeping the file's comments; a name the
// file has is ErrServerExists, before and at the write, and nothing
// changes.
func TestAddTo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp.json")
	const file = "{\n  // mine\n  \"servers\": {\n    \"todo\": {\"command\": \"todo-mcp\"} // local\n  }\n}\n"
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &Server{Name: "io.github.x/todo", Version: "1.0.0", Remotes: []Transport{{Type: "sse", URL: "https://h/sse"}}}
	if err := CheckAbsent(path, "todo"); !errors.Is(err, mcpconfig.ErrServerExists) {
		t.Errorf("CheckAbsent(todo) = %v; want ErrServerExists", err)
	}
	e, err := NewEntry(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.AddTo(path); !errors.Is(err, mcpconfig.ErrServerExists) {
		t.Errorf("AddTo(todo) = %v; want ErrServerExists", err)
	}
	if data, _ := os.ReadFile(path); string(data) != file {
		t.Errorf("the file changed:\n%s", data)
	}
	if err := CheckAbsent(path, "todo2"); err != nil {
		t.Errorf("CheckAbsent(todo2) = %v", err)
	}
	if e, err = NewEntry(s, &EntryOptions{Name: "todo2"}); err != nil {
		t.Fatal(err)
	}
	if err := e.AddTo(path); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	for _, want := range []string{"// mine", "// local", `"todo2": {`, `"url": "https://h/sse"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the file lacks %s:\n%s", want, data)
		}
	}
}
