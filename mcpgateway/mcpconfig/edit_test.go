package mcpconfig

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/elysia-go/elysia/internal/testenv"
)

// quietOpts parses without the environment and without prompting.
var quietOpts = &LoadOptions{LookupEnv: func(string) (string, bool) { return "", false }, BaseDir: "/base"}

// serverNames parses data and returns its servers' names in order.
func serverNames(t *testing.T, data []byte) []string {
	t.Helper()
	cfg, err := Parse("mcp.json", data, quietOpts)
	if err != nil {
		t.Fatalf("edited file does not parse: %v\n%s", err, data)
	}
	var names []string
	for _, s := range cfg.Servers {
		names = append(names, s.Name)
	}
	return names
}

const newEntry = `{"type": "stdio", "command": "npx", "args": ["-y", "@scope/pkg@1.2.3"], "env": {"LOG": "info"},
	"inputs": [{"type": "promptString", "id": "new_token", "description": "API token", "password": true}],
	"registry": {"name": "io.github.x/new", "version": "1.2.3"}}`

// TestEditAddGolden adds one entry to a sample of every dialect: the
// result keeps every comment and is compared with a golden file.
func TestEditAddGolden(t *testing.T) {
	for _, name := range []string{"valid_vscode", "valid_claude", "valid_seeds", "bare_array"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "config", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			before := serverNames(t, data)
			e, err := NewEdit("mcp.json", data)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Add("new", []byte(newEntry)); err != nil {
				t.Fatal(err)
			}
			got := e.Bytes()
			if diff := cmp.Diff(append(before, "new"), serverNames(t, got)); diff != "" {
				t.Errorf("servers after Add (-want +got):\n%s", diff)
			}
			for line := range strings.Lines(string(data)) {
				if i := strings.Index(line, "// "); i >= 0 && !strings.Contains(string(got), line[i:]) {
					t.Errorf("comment %q lost", line[i:])
				}
			}
			testenv.Golden(t, filepath.Join("testdata", "edit", name+".add.golden"), got)
		})
	}
}

func TestEditAdd(t *testing.T) {
	entry := `{"command": "x", "args": ["a"]}`
	for _, tc := range []struct {
		name, in, want string
	}{
		{"new file", "", "{\n  \"servers\": {\n    \"new\": {\n      \"command\": \"x\",\n      \"args\": [\"a\"]\n    }\n  }\n}\n"},
		{"white space only", " \n", "{\n  \"servers\": {\n    \"new\": {\n      \"command\": \"x\",\n      \"args\": [\"a\"]\n    }\n  }\n}\n"},
		{"no servers key", "{\n  \"inputs\": []\n}\n",
			"{\n  \"inputs\": [],\n  \"servers\": {\n    \"new\": {\n      \"command\": \"x\",\n      \"args\": [\"a\"]\n    }\n  }\n}\n"},
		{"one line", `{"servers": {"a": {"command": "y"}}}`,
			`{"servers": {"a": {"command": "y"}, "new": {"command": "x", "args": ["a"]}}}`},
		{"empty servers on one line", "{\n  \"servers\": {}\n}\n",
			"{\n  \"servers\": {\n    \"new\": {\n      \"command\": \"x\",\n      \"args\": [\"a\"]\n    }\n  }\n}\n"},
		{"comment on the last line stays", "{\n  \"servers\": {\n    \"a\": {\"command\": \"y\"} // the a server\n  }\n}\n",
			"{\n  \"servers\": {\n    \"a\": {\"command\": \"y\"}, // the a server\n    \"new\": {\n      \"command\": \"x\",\n      \"args\": [\"a\"]\n    }\n  }\n}\n"},
		{"comments after the last entry stay before the new one", "{\n  \"servers\": {\n    \"a\": {\"command\": \"y\"},\n    // \"b\": {\"command\": \"z\"},\n  },\n}\n",
			"{\n  \"servers\": {\n    \"a\": {\"command\": \"y\"},\n    // \"b\": {\"command\": \"z\"},\n    \"new\": {\n      \"command\": \"x\",\n      \"args\": [\"a\"]\n    },\n  },\n}\n"},
		{"tabs", "{\n\t\"mcpServers\": {\n\t\t\"a\": {\n\t\t\t\"command\": \"y\"\n\t\t}\n\t}\n}",
			"{\n\t\"mcpServers\": {\n\t\t\"a\": {\n\t\t\t\"command\": \"y\"\n\t\t},\n\t\t\"new\": {\n\t\t\t\"command\": \"x\",\n\t\t\t\"args\": [\"a\"]\n\t\t}\n\t}\n}"},
		{"four spaces", "{\n    \"servers\": {\n        \"a\": {\"command\": \"y\"}\n    }\n}\n",
			"{\n    \"servers\": {\n        \"a\": {\"command\": \"y\"},\n        \"new\": {\n            \"command\": \"x\",\n            \"args\": [\"a\"]\n        }\n    }\n}\n"},
		{"line comment at the end of the file", "{\"servers\": {\"a\": {\"command\": \"y\"}}} // end",
			"{\"servers\": {\"a\": {\"command\": \"y\"}, \"new\": {\"command\": \"x\", \"args\": [\"a\"]}}} // end\n"},
		{"list", "[\n  {\"name\": \"a\", \"command\": \"y\"}\n]\n",
			"[\n  {\"name\": \"a\", \"command\": \"y\"},\n  {\n    \"name\": \"new\",\n    \"command\": \"x\",\n    \"args\": [\"a\"]\n  }\n]\n"},
		{"empty list", "{\"servers\": []}", `{"servers": [{"name": "new", "command": "x", "args": ["a"]}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := NewEdit("mcp.json", []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Add("new", []byte(entry)); err != nil {
				t.Fatal(err)
			}
			got := string(e.Bytes())
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Add (-want +got):\n%s", diff)
			}
			if names := serverNames(t, []byte(got)); !slices.Contains(names, "new") {
				t.Errorf("servers after Add = %v; want new among them", names)
			}
		})
	}
}

// TestEditAddExisting: a name already in the file (in any block) is
// refused and nothing changes.
func TestEditAddExisting(t *testing.T) {
	for _, in := range []string{
		`{"servers": {"todo": {"command": "x"}}}`,
		`{"servers": {"a": {"command": "x"}}, "mcpServers": {"todo": {"command": "y"}}}`,
		`[{"name": "todo", "command": "x"}]`,
	} {
		e, err := NewEdit("mcp.json", []byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Add("todo", []byte(`{"command": "z"}`)); !errors.Is(err, ErrServerExists) {
			t.Errorf("Add(todo) to %s = %v; want ErrServerExists", in, err)
		}
		if got := string(e.Bytes()); got != in {
			t.Errorf("file changed by a refused Add:\n%s", got)
		}
	}
}

func TestEditRemove(t *testing.T) {
	for _, tc := range []struct {
		name, in, remove, want string
	}{
		{"leading comment and same-line comment go with it",
			"{\n  \"servers\": {\n    // the todo server\n    \"todo\": {\"command\": \"x\"}, // local\n    \"b\": {\"command\": \"y\"}\n  }\n}\n", "todo",
			"{\n  \"servers\": {\n    \"b\": {\"command\": \"y\"}\n  }\n}\n"},
		{"last: the previous line keeps its comment and loses its comma",
			"{\n  \"servers\": {\n    \"a\": {\"command\": \"x\"}, // A\n    // about b\n    \"b\": {\"command\": \"y\"} // B\n  }\n}\n", "b",
			"{\n  \"servers\": {\n    \"a\": {\"command\": \"x\"} // A\n  }\n}\n"},
		{"last with a trailing comma",
			"{\n  \"servers\": {\n    \"a\": {\"command\": \"x\"},\n    \"b\": {\"command\": \"y\"},\n  },\n}\n", "b",
			"{\n  \"servers\": {\n    \"a\": {\"command\": \"x\"},\n  },\n}\n"},
		{"middle",
			"{\n  \"servers\": {\n    \"a\": {\"command\": \"x\"},\n    \"b\": {\n      \"command\": \"y\"\n    },\n    \"c\": {\"command\": \"z\"}\n  }\n}\n", "b",
			"{\n  \"servers\": {\n    \"a\": {\"command\": \"x\"},\n    \"c\": {\"command\": \"z\"}\n  }\n}\n"},
		{"the comment on the opening line stays",
			"{\n  \"servers\": { // mine\n    \"a\": {\"command\": \"x\"},\n    \"b\": {\"command\": \"y\"}\n  }\n}\n", "a",
			"{\n  \"servers\": { // mine\n    \"b\": {\"command\": \"y\"}\n  }\n}\n"},
		{"one line", `{"servers": {"a": {"command": "x"}, "b": {"command": "y"}, "c": {"command": "z"}}}`, "b",
			`{"servers": {"a": {"command": "x"}, "c": {"command": "z"}}}`},
		{"one line, first", `{"servers": {"a": {"command": "x"}, "b": {"command": "y"}}}`, "a",
			`{"servers": {"b": {"command": "y"}}}`},
		{"one line, last", `{"servers": {"a": {"command": "x"}, "b": {"command": "y"}}}`, "b",
			`{"servers": {"a": {"command": "x"}}}`},
		{"list", "[\n  {\"name\": \"a\", \"command\": \"x\"},\n  {\"name\": \"b\", \"command\": \"y\"}\n]\n", "a",
			"[\n  {\"name\": \"b\", \"command\": \"y\"}\n]\n"},
		{"block comment across lines before the next entry stays",
			"{\n  \"servers\": {\n    \"a\": {\"command\": \"x\"},\n    /* about\n       b */\n    \"b\": {\"command\": \"y\"}\n  }\n}\n", "a",
			"{\n  \"servers\": {\n    /* about\n       b */\n    \"b\": {\"command\": \"y\"}\n  }\n}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := NewEdit("mcp.json", []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			before := serverNames(t, []byte(tc.in))
			if err := e.Remove(tc.remove); err != nil {
				t.Fatal(err)
			}
			got := string(e.Bytes())
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Remove(%s) (-want +got):\n%s", tc.remove, diff)
			}
			want := slices.DeleteFunc(before, func(n string) bool { return n == tc.remove })
			if diff := cmp.Diff(want, serverNames(t, []byte(got))); diff != "" {
				t.Errorf("servers after Remove (-want +got):\n%s", diff)
			}
		})
	}
	e, err := NewEdit("mcp.json", []byte(`{"servers": {}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Remove("nope"); !errors.Is(err, ErrNoServer) {
		t.Errorf("Remove(nope) = %v; want ErrNoServer", err)
	}
}

func TestEditUpdate(t *testing.T) {
	in := `{
  "servers": {
    // from the registry
    "w": {
      "type": "http", // remote first
      "url": "https://old.example.com/mcp",
      "headers": {"X-Key": "${input:w_key}"},
      "tools": {"deny": ["delete_*"]}, // mine: keep
      "registry": {"name": "com.example/w", "version": "1.0.0"}
    },
    "other": {"command": "x"}
  }
}
`
	want := `{
  "servers": {
    // from the registry
    "w": {
      "type": "stdio", // remote first
      "tools": {"deny": ["delete_*"]}, // mine: keep
      "registry": {"name": "com.example/w", "version": "2.0.0"},
      "command": "npx",
      "args": ["-y", "w@2.0.0"]
    },
    "other": {"command": "x"}
  }
}
`
	e, err := NewEdit("mcp.json", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	entry := `{"type": "stdio", "command": "npx", "args": ["-y", "w@2.0.0"], "registry": {"name": "com.example/w", "version": "2.0.0"}}`
	if err := e.Update("w", []byte(entry), []string{"type", "command", "args", "env", "url", "headers", "inputs", "registry"}); err != nil {
		t.Fatal(err)
	}
	got := string(e.Bytes())
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Update (-want +got):\n%s", diff)
	}
	serverNames(t, []byte(got))
	if err := e.Update("nope", []byte(entry), nil); !errors.Is(err, ErrNoServer) {
		t.Errorf("Update(nope) = %v; want ErrNoServer", err)
	}
}

func TestEditEntry(t *testing.T) {
	e, err := NewEdit("mcp.json", []byte("[\n  // c\n  {\"name\": \"a\", /* x */ \"command\": \"y\",},\n]"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Entry("a")
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"name":"a","command":"y"}`; string(got) != want {
		t.Errorf("Entry(a) = %s; want %s", got, want)
	}
}

// TestNewEditBadFile: a file that is not JSON is refused with its
// position.
func TestNewEditBadFile(t *testing.T) {
	_, err := NewEdit("mcp.json", []byte("{\n  \"servers\": {,\n}"))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Line != 2 {
		t.Fatalf("NewEdit(bad) = %v; want a *ConfigError on line 2", err)
	}
}

func TestEditFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	orig := "{\n  // keep me\n  \"servers\": {\n    \"a\": {\"command\": \"x\"}\n  }\n}\n"
	if err := os.WriteFile(path, []byte(orig), 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	add := func(name string) func(*Edit) error {
		return func(e *Edit) error { return e.Add(name, []byte(`{"command": "y"}`)) }
	}
	if err := EditFile(link, add("b")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode after EditFile = %v; want 0640 kept", fi.Mode().Perm())
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symbolic link was replaced: %v, %v", fi, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "// keep me") || !slices.Equal(serverNames(t, data), []string{"a", "b"}) {
		t.Errorf("file after EditFile:\n%s", data)
	}

	// An edit that would break a valid file writes nothing.
	err = EditFile(path, add("B")) // its tool name, mcp_b, is b's
	if !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("EditFile(add B beside b) = %v; want ErrInvalidConfig (tool names collide)", err)
	}
	after, _ := os.ReadFile(path)
	if string(after) != string(data) {
		t.Errorf("a refused edit changed the file:\n%s", after)
	}
	// An existing name writes nothing.
	if err := EditFile(path, add("a")); !errors.Is(err, ErrServerExists) {
		t.Errorf("EditFile(add a) = %v; want ErrServerExists", err)
	}
	// A file changed under the edit writes nothing.
	err = EditFile(path, func(e *Edit) error {
		if err := os.WriteFile(path, []byte(orig), 0o640); err != nil {
			t.Fatal(err)
		}
		return e.Add("c", []byte(`{"command": "y"}`))
	})
	if !errors.Is(err, ErrFileChanged) {
		t.Errorf("EditFile with a concurrent write = %v; want ErrFileChanged", err)
	}
	if after, _ := os.ReadFile(path); string(after) != orig {
		t.Errorf("the concurrent write was overwritten:\n%s", after)
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".*.tmp"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left behind: %v", leftovers)
	}

	// A missing file is created, 0600.
	fresh := filepath.Join(dir, "new.json")
	if err := EditFile(fresh, add("a")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("new file: %v, %v; want mode 0600", fi, err)
	}
}

// TestEditForeignBlocks edits files in Zed's and opencode's shapes: their
// servers are found, changed and removed in place, and a new server goes to
// a "servers" block those programs do not read.
func TestEditForeignBlocks(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{"zed", `{"theme": "x", "context_servers": {"z": {"command": {"path": "x"}}, "y": {"url": "https://h/"}}}`,
			`{"theme": "x", "context_servers": {"y": {"url": "https://h/"}}, "servers": {"n": {"command": "x"}}}`},
		{"opencode", `{"mcp": {"z": {"type": "local", "command": ["x"]}, "y": {"type": "remote", "url": "https://h/"}}}`,
			`{"mcp": {"y": {"type": "remote", "url": "https://h/"}}, "servers": {"n": {"command": "x"}}}`},
		{"opencode v2", `{"mcp": {"servers": {"z": {"type": "local", "command": ["x"]}, "y": {"type": "remote", "url": "https://h/"}}}}`,
			`{"mcp": {"servers": {"y": {"type": "remote", "url": "https://h/"}}}, "servers": {"n": {"command": "x"}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := NewEdit("mcp.json", []byte(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if !e.Has("z") || !e.Has("y") {
				t.Fatalf("Has(z), Has(y) = %v, %v; want both", e.Has("z"), e.Has("y"))
			}
			if err := e.Remove("z"); err != nil {
				t.Fatal(err)
			}
			if err := e.Add("n", []byte(`{"command": "x"}`)); err != nil {
				t.Fatal(err)
			}
			if got := string(e.Bytes()); got != tc.want {
				t.Errorf("edited file:\n%s\nwant\n%s", got, tc.want)
			}
			if got := serverNames(t, e.Bytes()); !slices.Equal(got, []string{"y", "n"}) {
				t.Errorf("servers = %v; want [y n]", got)
			}
		})
	}
}

// fuzzName is a server name FuzzEdit adds: one Parse accepts.
var fuzzName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,20}$`)

// FuzzEdit checks that the editor never panics on any file, and that on a
// valid file adding a server keeps every other server and removing one
// removes exactly that one, leaving a valid file.
func FuzzEdit(f *testing.F) {
	files, err := filepath.Glob("testdata/config/*.json")
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, "new")
	}
	f.Add([]byte("{\n  \"servers\": { // c\n    \"a\": {\"command\": \"x\"}, /* b\n */\n  },\n} // end"), "a")
	f.Add([]byte(`[{"name": "a", "command": "x"},]`), "b")
	f.Add([]byte(``), "a")
	f.Add([]byte(`{"context_servers": {"z": {"command": {"path": "x"}}}}`), "a")
	f.Add([]byte(`{"mcp": {"m": {"type": "local", "command": ["x"]}}}`), "a")
	f.Add([]byte(`{"mcp": {"servers": {"m": {"type": "remote", "url": "https://h/"}}}}`), "a")
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		e, err := NewEdit("mcp.json", data)
		if err != nil {
			return
		}
		cfg, perr := Parse("mcp.json", data, quietOpts)
		if err := e.Add(name, []byte(`{"command": "x", "args": ["a"]}`)); err != nil || perr != nil || !fuzzName.MatchString(name) {
			return
		}
		var before []string
		for _, s := range cfg.Servers {
			if ToolName(s.Name) == ToolName(name) {
				return
			}
			before = append(before, s.Name)
		}
		added := e.Bytes()
		got := serverNames(t, added)
		if !slices.Contains(got, name) || !slices.Equal(slices.DeleteFunc(slices.Clone(got), func(n string) bool { return n == name }), before) {
			t.Fatalf("servers after Add(%q) = %v; want %v and it\n%s", name, got, before, added)
		}
		for _, s := range append(before, name) {
			e, err := NewEdit("mcp.json", added)
			if err != nil {
				t.Fatalf("the edited file does not parse: %v\n%s", err, added)
			}
			if err := e.Remove(s); err != nil {
				t.Fatal(err)
			}
			want := slices.DeleteFunc(append(before[:len(before):len(before)], name), func(n string) bool { return n == s })
			if got := serverNames(t, e.Bytes()); !slices.Equal(got, want) {
				t.Fatalf("servers after Remove(%q) = %v; want %v\n%s", s, got, want, e.Bytes())
			}
		}
	})
}
