package mcpconfig

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// configErrors flattens what Parse returned into *ConfigError values.
func configErrors(t *testing.T, err error) []*ConfigError {
	t.Helper()
	var out []*ConfigError
	var walk func(error)
	walk = func(err error) {
		if ce, ok := err.(*ConfigError); ok {
			out = append(out, ce)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		t.Errorf("error %T %v is neither a *ConfigError nor a join of them", err, err)
	}
	walk(err)
	return out
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"bad json", "{\n  \"servers\": {\n    \"a\": {\"command\": \"x\",}\n    \"b\": {}\n  }\n}",
			[]string{`mcp.json:4:5: invalid JSON: invalid character '"' after object key:value pair (missing comma?)`}},
		{"truncated", `{"servers": {"a": {"command": "x"`, []string{`mcp.json:1:34: invalid JSON: unexpected end of file`}},
		{"trailing data", "{}\n}", []string{`mcp.json:2:1: invalid JSON: unexpected data after the top-level value`}},
		{"empty file", "  \n", []string{`mcp.json:1:1: empty file: want a JSON object or array`}},
		{"top level string", `"x"`, []string{`mcp.json:1:1: the top level must be an object, got a string`}},
		{"unknown type", "{\"servers\": {\n  \"x\": {\"type\": \"foo\", \"command\": \"c\"}}}",
			[]string{`mcp.json:2:17: server "x": unknown type "foo" (want stdio, http or sse)`}},
		{"column counts characters", "{\"servers\": {\"é€\": {\"type\": \"foo\", \"command\": \"c\"}}}",
			[]string{`mcp.json:1:29: server "é€": unknown type "foo" (want stdio, http or sse)`}},
		{"comments keep positions", "{ // é\n /* x\n y */ \"servers\": {\"a\": {\"type\": \"foo\", \"command\": \"c\"}}}",
			[]string{`mcp.json:3:33: server "a": unknown type "foo" (want stdio, http or sse)`}},
		{"bad log level", `{"servers": {"x": {"command": "c", "log_level": "loud"}}}`,
			[]string{`mcp.json:1:49: server "x": log_level must be one of debug, info, notice, warning, error, critical, alert, emergency, got "loud"`}},
		{"bad protocol version", `{"servers": {"x": {"command": "c", "protocol_version": "latest"}}}`,
			[]string{`mcp.json:1:56: server "x": protocol_version must be a date like "2025-11-25", got "latest"`}},
		{"roots not a list", `{"servers": {"x": {"command": "c", "roots": "./a"}}}`,
			[]string{`mcp.json:1:45: server "x": roots must be an array of folder paths, got a string`}},
		{"bad max_call_time", `{"servers": {"x": {"command": "c", "max_call_time": -1}}}`,
			[]string{`mcp.json:1:53: server "x": max_call_time must be a number of seconds > 0 and <= 86400`}},
		{"missing command", `{"servers": {"x": {"type": "stdio"}}}`,
			[]string{`mcp.json:1:14: server "x": missing command (a stdio server needs command or server_script_path)`}},
		{"missing url", `{"servers": {"x": {"type": "sse"}}}`, []string{`mcp.json:1:14: server "x": missing url (an sse server needs one)`}},
		{"missing both", `{"servers": {"x": {"description": "d"}}}`,
			[]string{`mcp.json:1:14: server "x": missing command or url (cannot tell the transport)`}},
		{"invalid url", `{"servers": {"x": {"url": "localhost:8000"}}}`,
			[]string{`mcp.json:1:27: server "x": invalid url "localhost:8000": want an http:// or https:// url`}},
		{"url without host", `{"servers": {"x": {"url": "http:///mcp"}}}`,
			[]string{`mcp.json:1:27: server "x": invalid url "http:///mcp": missing host`}},
		{"duplicate name in object", "{\"servers\": {\n  \"a\": {\"command\": \"x\"},\n  \"a\": {\"command\": \"y\"}}}",
			[]string{`mcp.json:3:3: key "a" given twice in the same object (first at 2:3)`}},
		{"duplicate name in list", "[{\"name\": \"a\", \"command\": \"x\"},\n {\"name\": \"a\", \"command\": \"y\"}]",
			[]string{`mcp.json:2:2: server "a": server name given twice (first at 1:2)`}},
		{"duplicate key in server", `{"servers": {"a": {"command": "x", "command": "y"}}}`,
			[]string{`mcp.json:1:36: key "command" given twice in the same object (first at 1:20)`}},
		{"tool name collision", "{\"servers\": {\n  \"a-b\": {\"command\": \"x\"},\n  \"A_B\": {\"command\": \"y\"}}}",
			[]string{`mcp.json:3:3: server "A_B": tool name "mcp_a_b" collides with server "a-b" at 2:3; rename one`}},
		{"bad glob", `{"servers": {"a": {"command": "x", "tools": {"allow": ["ok", "[z"], "deny": ["\\"]}}}}`,
			[]string{
				`mcp.json:1:62: server "a": bad tools.allow pattern "[z" (want a name or a path.Match glob)`,
				`mcp.json:1:78: server "a": bad tools.deny pattern "\\" (want a name or a path.Match glob)`,
			}},
		{"zero timeout", `{"servers": {"a": {"command": "x", "connect_timeout": 0}}}`,
			[]string{`mcp.json:1:55: server "a": connect_timeout must be a number of seconds > 0 and <= 86400`}},
		{"string timeout", `{"servers": {"a": {"command": "x", "call_timeout": "5"}}}`,
			[]string{`mcp.json:1:52: server "a": call_timeout must be a number of seconds > 0 and <= 86400`}},
		{"args not strings", `{"servers": {"a": {"command": "x", "args": ["a", 1]}}}`,
			[]string{`mcp.json:1:50: server "a": args must be an array of strings, got a number in it`}},
		{"args not array", `{"servers": {"a": {"command": "x", "args": "-v"}}}`,
			[]string{`mcp.json:1:44: server "a": args must be an array of strings, got a string`}},
		{"command not string", `{"servers": {"a": {"command": ["x"]}}}`,
			[]string{`mcp.json:1:31: server "a": command must be a string, got an array`}},
		{"env not strings", `{"servers": {"a": {"command": "x", "env": {"A": {}}}}}`,
			[]string{`mcp.json:1:49: server "a": env values must be strings, got an object for "A"`}},
		{"enabled not bool", `{"servers": {"a": {"command": "x", "enabled": "no"}}}`,
			[]string{`mcp.json:1:47: server "a": enabled must be a boolean, got a string`}},
		{"server not object", `{"servers": {"a": "x"}}`, []string{`mcp.json:1:19: server "a": a server must be an object, got a string`}},
		// Substitution errors point at the "${" itself, also after escapes.
		{"unknown substitution", `{"servers": {"a": {"command": "x", "args": ["${config:foo}"]}}}`,
			[]string{`mcp.json:1:46: server "a": unknown substitution "${config:foo}" (want ${NAME}, ${NAME:-default}, ${env:NAME}, ${input:ID}, ${user:NAME} in headers and env, ${workspaceFolder}, ${workspaceFolderBasename}, ${userHome} or ${pathSeparator})`}},
		{"unterminated substitution", `{"servers": {"a": {"headers": {"Authorization": "Bearer s3cret ${env:X"}}}}`,
			[]string{`mcp.json:1:64: server "a": unterminated "${" in the value (no closing "}")`}},
		{"empty env name", `{"servers": {"a": {"command": "${env:}"}}}`, []string{`mcp.json:1:32: server "a": empty name in "${env:}"`}},
		{"editor variable", `{"servers": {"a": {"command": "x", "args": ["--in", "${file}"]}}}`,
			[]string{`mcp.json:1:54: server "a": "${file}" is an editor variable with no meaning outside the editor`}},
		{"bad env name", `{"servers": {"a": {"url": "http://h/${1X}"}}}`,
			[]string{`mcp.json:1:37: server "a": unknown substitution "${1X}" (want ${NAME}, ${NAME:-default}, ${env:NAME}, ${input:ID}, ${user:NAME} in headers and env, ${workspaceFolder}, ${workspaceFolderBasename}, ${userHome} or ${pathSeparator})`}},
		{"after escapes", `{"servers": {"a": {"command": "x", "args": ["\"q\" \u00e9\ud83d\ude00 ${nope:x}"]}}}`,
			[]string{`mcp.json:1:71: server "a": unknown substitution "${nope:x}" (want ${NAME}, ${NAME:-default}, ${env:NAME}, ${input:ID}, ${user:NAME} in headers and env, ${workspaceFolder}, ${workspaceFolderBasename}, ${userHome} or ${pathSeparator})`}},
		{"user in url", `{"servers": {"a": {"url": "https://h/mcp?key=${user:KEY}"}}}`,
			[]string{`mcp.json:1:46: server "a": "${user:KEY}" takes the asking user's own secret: only in headers, and in env of a stdio server`}},
		{"user in args", `{"servers": {"a": {"command": "x", "args": ["--token=${user:T}"]}}}`,
			[]string{`mcp.json:1:54: server "a": "${user:T}" takes the asking user's own secret: only in headers, and in env of a stdio server`}},
		{"bad user name", `{"servers": {"a": {"url": "https://h/mcp", "headers": {"X-Key": "${user:a/b}"}}}}`,
			[]string{`mcp.json:1:66: server "a": invalid secret name "a/b" in "${user:a/b}" (want letters, digits, '_', '.' or '-', at most 128)`}},
		{"empty user name", `{"servers": {"a": {"url": "https://h/mcp", "headers": {"X-Key": "${user:}"}}}}`,
			[]string{`mcp.json:1:66: server "a": empty name in "${user:}"`}},
		{"user in env of http", `{"servers": {"a": {"url": "https://h/mcp", "env": {"T": "x ${user:T}"}}}}`,
			[]string{`mcp.json:1:60: server "a": ${user:} in env.T: env of an http server reaches no process; use headers`}},
		{"user in headers of stdio", `{"servers": {"a": {"command": "x", "headers": {"X-Key": "${user:K}"}}}}`,
			[]string{`mcp.json:1:58: server "a": ${user:} in headers.X-Key: headers of a stdio server are never sent`}},
		{"list entry without name", `[{"command": "x"}]`, []string{`mcp.json:1:2: server has no "name"`}},
		{"bad input type", `{"inputs": [{"type": "command", "id": "x"}], "servers": {}}`,
			[]string{`mcp.json:1:13: input "x": unknown type "command" (want promptString or pickString)`}},
		{"input declared twice", `{"inputs": [{"type": "promptString", "id": "x"}, {"type": "promptString", "id": "x"}], "servers": {}}`,
			[]string{`mcp.json:1:50: input "x" declared twice`}},
		{"several at once", "{\"servers\": {\n  \"a\": {\"type\": \"tcp\", \"command\": \"x\"},\n  \"b\": {\"type\": \"http\"}}}",
			[]string{
				`mcp.json:2:17: server "a": unknown type "tcp" (want stdio, http or sse)`,
				`mcp.json:3:3: server "b": missing url (an http server needs one)`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("mcp.json", []byte(tt.src), &LoadOptions{LookupEnv: envMap(nil), BaseDir: "/base"})
			if err == nil {
				t.Fatalf("Parse(%s) = %+v, want an error", tt.src, cfg.Servers)
			}
			if cfg != nil {
				t.Errorf("Parse returned a config with its error")
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("errors.Is(%v, ErrInvalidConfig) = false", err)
			}
			var got []string
			for _, ce := range configErrors(t, err) {
				got = append(got, ce.Error())
				if ce.Line < 1 || ce.Column < 1 {
					t.Errorf("error %q has no position", ce)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse(%s) errors mismatch (-want +got):\n%s", tt.src, diff)
			}
		})
	}
}

func TestParseWarnings(t *testing.T) {
	src := "{\"servers\": {\n  \"a\": {\"command\": \"x\", \"autoApprove\": [], \"alwaysAllow\": [\"t\"], \"url\": \"http://h\"},\n" +
		"  \"b\": {\"url\": \"http://h\", \"name\": \"b\", \"tools\": {\"only\": []}}\n}, \"version\": 1}"
	cfg := parseOK(t, src, nil)
	want := []string{
		`mcp.json:2:25: server "a": unknown key "autoApprove" ignored`,
		`mcp.json:2:44: server "a": unknown key "alwaysAllow" ignored`,
		`mcp.json:2:73: server "a": url ignored: the server uses stdio`,
		`mcp.json:3:28: server "b": key "name" ignored: the server is named by its key`,
		`mcp.json:3:51: server "b": unknown key "only" in tools ignored (want allow or deny)`,
		`mcp.json:4:4: unknown key "version" ignored`,
	}
	if diff := cmp.Diff(want, cfg.Warnings); diff != "" {
		t.Errorf("warnings mismatch (-want +got):\n%s", diff)
	}
	if _, err := Parse("mcp.json", []byte(`{"other": {}}`), nil); err == nil || !strings.Contains(err.Error(), "no servers") {
		t.Errorf("a file without servers: err = %v, want no servers", err)
	}
	// An unknown type is reported once, as the error; no warning about
	// the command that type would not use.
	cfg, err := Parse("mcp.json", []byte(`{"servers": {"a": {"type": "bogus", "command": "x"}}}`), nil)
	if err == nil || !strings.Contains(err.Error(), `unknown type "bogus"`) {
		t.Errorf("unknown type: err = %v", err)
	}
	if cfg != nil && len(cfg.Warnings) > 0 {
		t.Errorf("unknown type also warns: %q", cfg.Warnings)
	}
}

func TestEnvFileFromConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(".env", "# comment\nTOKEN=from-file\nSHARED=\"file value\" # note\n")
	write("bad.env", "OK=1\nTOKEN: s3cret-pasted\nKEY=\"s3cret-open\n")
	write("mcp.json", `{"servers": {
  "a": {"command": "x", "envFile": ".env", "env": {"SHARED": "explicit"}},
  "b": {"command": "x", "envFile": "${workspaceFolder}/missing.env"}}}`)
	cfg, err := Load(filepath.Join(dir, "mcp.json"), &LoadOptions{LookupEnv: envMap(nil)})
	if err != nil {
		t.Fatal(err)
	}
	a, b := cfg.Servers[0], cfg.Servers[1]
	if diff := cmp.Diff(map[string]string{"TOKEN": "from-file", "SHARED": "explicit"}, a.Env); diff != "" {
		t.Errorf("env of a (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"from-file", "explicit"}, a.Secrets); diff != "" {
		t.Errorf("secrets of a (-want +got):\n%s", diff)
	}
	if want := `envFile "` + filepath.Join(dir, "missing.env") + `": cannot read: no such file or directory`; b.Unresolved != want {
		t.Errorf("Unresolved of b = %q, want %q", b.Unresolved, want)
	}

	write("mcp.json", `{"servers": {"a": {"command": "x", "envFile": "bad.env"}}}`)
	_, err = Load(filepath.Join(dir, "mcp.json"), &LoadOptions{LookupEnv: envMap(nil)})
	bad := filepath.Join(dir, "bad.env")
	want := bad + `:2:1: server "a": no "=" on the line (want KEY=VALUE)` + "\n" +
		bad + `:3:1: server "a": KEY: unterminated double quote`
	if err == nil || err.Error() != want {
		t.Errorf("Load with a bad envFile: error %v, want %s", err, want)
	}
	if err != nil && strings.Contains(err.Error(), "s3cret") {
		t.Errorf("the envFile error shows a value: %v", err)
	}
}

func TestParseServerFeatureKeys(t *testing.T) {
	src := `{"servers": {"x": {"command": "c", "sampling": true, "roots": ["./project", "/abs"], "log_level": "warning",
		"protocol_version": "2025-06-18", "max_call_time": 120, "elicitation_timeout": 30, "call_timeout": 5}}}`
	cfg, err := Parse("mcp.json", []byte(src), &LoadOptions{BaseDir: "/srv/conf"})
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Servers[0]
	if s.Sampling != SamplingAsk || s.LogLevel != "warning" || s.ProtocolVersion != "2025-06-18" ||
		strings.Join(s.Roots, ",") != "/srv/conf/project,/abs" {
		t.Errorf("parsed %+v", s)
	}
	if maxCall, elicit := s.Limits(); maxCall != 120*time.Second || elicit != 30*time.Second {
		t.Errorf("Limits = %v, %v; want 2m0s, 30s", maxCall, elicit)
	}
	s.MaxCallTime, s.ElicitationTimeout = 0, 0
	if maxCall, elicit := s.Limits(); maxCall != 50*time.Second || elicit != DefaultElicitationTimeout {
		t.Errorf("default Limits = %v, %v; want 10 x call_timeout and 5m", maxCall, elicit)
	}
}
