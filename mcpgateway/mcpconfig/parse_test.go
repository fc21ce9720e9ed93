package mcpconfig

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/config")

// envMap returns a LookupEnv over a fixed map.
func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// goldenEnv is the environment the golden files were produced with.
var goldenEnv = map[string]string{
	"REMOTE_KEY":                "k-remote-1234",
	"ELYSIA_INPUT_GITHUB_TOKEN": "ghp_secret123",
	"ELYSIA_INPUT_SHARED":       "shared-key-99",
}

// goldenServer is a ServerConfig with the fields json skips made visible.
type goldenServer struct {
	ServerConfig
	ToolName   string            `json:"tool_name"`
	Templates  map[string]string `json:"templates,omitempty"`
	Secrets    []string          `json:"secrets,omitempty"`
	Unresolved string            `json:"unresolved,omitempty"`
	Position   string            `json:"position"`
}

// golden renders what Parse returned for a golden file.
func golden(t *testing.T, cfg *Config, err error) []byte {
	t.Helper()
	if err != nil {
		return []byte("error:\n" + err.Error() + "\n")
	}
	view := struct {
		Inputs   []Input        `json:"inputs,omitempty"`
		Servers  []goldenServer `json:"servers"`
		Warnings []string       `json:"warnings,omitempty"`
	}{Inputs: cfg.Inputs, Warnings: cfg.Warnings}
	for _, s := range cfg.Servers {
		view.Servers = append(view.Servers, goldenServer{s, ToolName(s.Name), s.Templates, s.Secrets, s.Unresolved,
			fmt.Sprintf("%d:%d", s.Line, s.Column)})
	}
	out, err := json.MarshalIndent(view, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// TestParseGolden parses every testdata/config/*.json and compares the
// result (servers or errors) with its .golden file; -update rewrites them.
func TestParseGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/config/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no sample files: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := Parse("mcp.json", data, &LoadOptions{LookupEnv: envMap(goldenEnv), BaseDir: "/srv/elysia"})
			if strings.HasPrefix(name, "invalid_") != (err != nil) {
				t.Errorf("Parse(%s) error = %v, want an error only for invalid_ files", file, err)
			}
			if err != nil && !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("Parse(%s) error %v does not match ErrInvalidConfig", file, err)
			}
			got := golden(t, cfg, err)
			goldenFile := strings.TrimSuffix(file, ".json") + ".golden"
			if *update {
				if err := os.WriteFile(goldenFile, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(goldenFile)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("Parse(%s) mismatch (-want +got):\n%s", file, diff)
			}
		})
	}
}

// parseOK parses src with env and base dir /base, failing the test on error.
func parseOK(t *testing.T, src string, env map[string]string) *Config {
	t.Helper()
	cfg, err := Parse("mcp.json", []byte(src), &LoadOptions{LookupEnv: envMap(env), BaseDir: "/base"})
	if err != nil {
		t.Fatalf("Parse(%s) error: %v", src, err)
	}
	return cfg
}

// ignorePos ignores where servers were found, for cases about values.
var ignorePos = cmpopts.IgnoreFields(ServerConfig{}, "Line", "Column")

func TestParseShapes(t *testing.T) {
	stdio := func(name, command string, args ...string) ServerConfig {
		return ServerConfig{Name: name, Transport: TransportStdio, Command: command, Args: args, Enabled: true,
			ConnectTimeout: DefaultStdioConnectTimeout, CallTimeout: DefaultCallTimeout}
	}
	remote := func(name, transport, url string) ServerConfig {
		return ServerConfig{Name: name, Transport: transport, URL: url, Enabled: true,
			ConnectTimeout: DefaultRemoteConnectTimeout, CallTimeout: DefaultCallTimeout}
	}
	disabled := func(s ServerConfig) ServerConfig { s.Enabled = false; return s }
	tests := []struct {
		name string
		src  string
		want []ServerConfig
	}{
		{"vscode", `{"servers": {"a": {"type": "stdio", "command": "srv"}, "b": {"type": "http", "url": "http://h/mcp"}}}`,
			[]ServerConfig{stdio("a", "srv"), remote("b", TransportHTTP, "http://h/mcp")}},
		{"claude", `{"mcpServers": {"a": {"command": "srv", "args": ["-v"]}, "b": {"url": "https://h/mcp"}}}`,
			[]ServerConfig{stdio("a", "srv", "-v"), remote("b", TransportHTTP, "https://h/mcp")}},
		{"claude sse by type", `{"mcpServers": {"b": {"type": "sse", "url": "https://h/sse"}}}`,
			[]ServerConfig{remote("b", TransportSSE, "https://h/sse")}},
		{"list", `{"servers": [{"name": "a", "command": "srv"}, {"name": "b", "type": "sse", "url": "http://h"}]}`,
			[]ServerConfig{stdio("a", "srv"), remote("b", TransportSSE, "http://h")}},
		{"bare array", `[{"name": "a", "command": "srv"}]`, []ServerConfig{stdio("a", "srv")}},
		{"file order kept", `{"servers": {"zeta": {"command": "z"}, "alpha": {"command": "a"}, "mid": {"command": "m"}}}`,
			[]ServerConfig{stdio("zeta", "z"), stdio("alpha", "a"), stdio("mid", "m")}},
		{"list order kept", `[{"name": "zeta", "command": "z"}, {"name": "alpha", "command": "a"}]`,
			[]ServerConfig{stdio("zeta", "z"), stdio("alpha", "a")}},
		{"transport aliases", `{"servers": {"a": {"type": "streamable_http", "url": "http://h"}, "b": {"type": "streamable-http", "url": "http://h"}, "c": {"transport": "streamableHttp", "url": "http://h"}}}`,
			[]ServerConfig{remote("a", TransportHTTP, "http://h"), remote("b", TransportHTTP, "http://h"), remote("c", TransportHTTP, "http://h")}},
		{"enabled false", `{"servers": {"a": {"command": "srv", "enabled": false}}}`, []ServerConfig{disabled(stdio("a", "srv"))}},
		{"disabled true", `{"mcpServers": {"a": {"command": "srv", "disabled": true}}}`, []ServerConfig{disabled(stdio("a", "srv"))}},
		{"disabled false", `{"mcpServers": {"a": {"command": "srv", "disabled": false}}}`, []ServerConfig{stdio("a", "srv")}},
		{"relative command", `{"servers": {"a": {"command": "./bin/srv", "cwd": "data"}}}`, []ServerConfig{func() ServerConfig {
			s := stdio("a", "/base/bin/srv")
			s.Cwd = "/base/data"
			s.Templates = map[string]string{"command": "./bin/srv", "cwd": "data"}
			return s
		}()}},
		{"absolute and bare commands stay", `{"servers": {"a": {"command": "/usr/bin/srv", "cwd": "/tmp"}, "b": {"command": "npx"}}}`,
			[]ServerConfig{func() ServerConfig { s := stdio("a", "/usr/bin/srv"); s.Cwd = "/tmp"; return s }(), stdio("b", "npx")}},
		{"script py", `[{"name": "a", "server_script_path": "srv/x.py", "args": ["-v"]}]`, []ServerConfig{func() ServerConfig {
			s := stdio("a", "python3", "/base/srv/x.py", "-v")
			s.Templates = map[string]string{"args[0]": "srv/x.py"}
			return s
		}()}},
		{"script js", `[{"name": "a", "server_script_path": "/x/index.js"}]`, []ServerConfig{stdio("a", "node", "/x/index.js")}},
		{"script mjs", `[{"name": "a", "server_script_path": "/x/index.mjs"}]`, []ServerConfig{stdio("a", "node", "/x/index.mjs")}},
		{"script direct", `[{"name": "a", "server_script_path": "./server"}]`, []ServerConfig{func() ServerConfig {
			s := stdio("a", "/base/server")
			s.Templates = map[string]string{"command": "./server"}
			return s
		}()}},
		{"script with command", `[{"name": "a", "command": "uv", "server_script_path": "/x/s.py"}]`, []ServerConfig{stdio("a", "uv", "/x/s.py")}},
		{"our keys", `{"servers": {"a": {"command": "srv", "description": "d", "branch": "b", "tools": {"allow": ["x*"], "deny": ["xy"]}, "connect_timeout": 1.5, "call_timeout": 10, "eager": true}}}`,
			[]ServerConfig{func() ServerConfig {
				s := stdio("a", "srv")
				s.Description, s.Branch, s.Allow, s.Deny = "d", "b", []string{"x*"}, []string{"xy"}
				s.ConnectTimeout, s.CallTimeout, s.Eager = 1500*time.Millisecond, 10*time.Second, true
				return s
			}()}},
		{"tools as a list", `{"servers": {"a": {"command": "srv", "tools": ["one", "two"]}}}`, []ServerConfig{func() ServerConfig {
			s := stdio("a", "srv")
			s.Allow = []string{"one", "two"}
			return s
		}()}},
		{"env and headers", `{"servers": {"a": {"command": "srv", "env": {"K": "value1", "N": 5, "GONE": null}}, "b": {"url": "http://h", "headers": {"H": "v"}}}}`,
			[]ServerConfig{func() ServerConfig {
				s := stdio("a", "srv")
				s.Env, s.Secrets = map[string]string{"K": "value1", "N": "5"}, []string{"value1", "5"}
				return s
			}(), func() ServerConfig {
				s := remote("b", TransportHTTP, "http://h")
				s.Headers, s.Secrets = map[string]string{"H": "v"}, []string{"v"}
				return s
			}()}},
		{"empty config", `{"servers": {}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseOK(t, tt.src, nil)
			if diff := cmp.Diff(tt.want, got.Servers, ignorePos, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Parse(%s) servers mismatch (-want +got):\n%s", tt.src, diff)
			}
		})
	}
}

func TestParsePositions(t *testing.T) {
	src := "{\n  \"servers\": {\n    \"a\": {\"command\": \"x\"},\n    \"é\": {\"command\": \"y\"}\n  }\n}"
	cfg := parseOK(t, src, nil)
	got := [][2]int{{cfg.Servers[0].Line, cfg.Servers[0].Column}, {cfg.Servers[1].Line, cfg.Servers[1].Column}}
	want := [][2]int{{3, 5}, {4, 5}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("server positions mismatch (-want +got):\n%s", diff)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(file, []byte(`{"servers": {"a": {"command": "./srv"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(file, &LoadOptions{LookupEnv: envMap(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "srv"); cfg.Servers[0].Command != want || cfg.File != file {
		t.Errorf("Load: command %q file %q, want %q %q", cfg.Servers[0].Command, cfg.File, want, file)
	}

	_, err = Load(filepath.Join(dir, "missing.json"), nil)
	if !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Load(missing) error = %v, want fs.ErrNotExist and ErrInvalidConfig", err)
	}
}
