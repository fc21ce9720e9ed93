package mcpgateway

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMask(t *testing.T) {
	s := ServerConfig{Secrets: []string{"abc", "tok-1234", "tok-1234-long", "a b+c/d"}}
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"nothing secret", "connection refused", "connection refused"},
		{"longest first", "key tok-1234-long and tok-1234", "key *** and ***"},
		{"query escaped", "GET /x?k=a+b%2Bc%2Fd", "GET /x?k=***"},
		{"short secret inside text kept", "abcdef", "abcdef"},
		{"short secret alone masked", " abc\n", "***"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := s.Mask(tt.in); got != tt.want {
				t.Errorf("Mask(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// secretConfig parses a config whose secrets are all "SECRET-..." values.
func secretConfig(t *testing.T) ServerConfig {
	t.Helper()
	src := `{"inputs": [{"type": "promptString", "id": "pw", "password": true}],
	"servers": {"a": {"command": "./bin/srv", "args": ["--token", "${input:pw}", "--db=${env:DB}"],
		"env": {"TODO_DB": "SECRET-db-path", "PW": "${input:pw}"},
		"url": "https://h/mcp?key=${env:KEY}", "headers": {"Authorization": "Bearer SECRET-header"}}}}`
	cfg := parseOK(t, src, map[string]string{"ELYSIA_INPUT_PW": "SECRET-pw", "DB": "SECRET-env-db", "KEY": "SECRET-key"})
	return cfg.Servers[0]
}

func TestDisplay(t *testing.T) {
	got := secretConfig(t).Display()
	want := DisplayConfig{
		Command: "./bin/srv",
		Args:    []string{"--token", "${input:pw}", "--db=${env:DB}"},
		URL:     "https://h/mcp?key=${env:KEY}",
		Env:     map[string]string{"TODO_DB": "***", "PW": "***"},
		Headers: map[string]string{"Authorization": "***"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Display() mismatch (-want +got):\n%s", diff)
	}
}

func TestSecretsNeverShown(t *testing.T) {
	s := secretConfig(t)
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	logger.Info("server", "server", s)
	logger.Info("masked", "err", s.Mask("dial https://h/mcp?key=SECRET-key: Bearer SECRET-header refused (SECRET-pw)"))
	logger.Info("display", "display", s.Display())
	if strings.Contains(buf.String(), "SECRET") {
		t.Errorf("a secret reached the log:\n%s", buf.String())
	}
	for _, want := range []string{`"name":"a"`, `"transport":"stdio"`, `"command":"./bin/srv"`, `"env":{"PW":"***","TODO_DB":"***"}`, `"headers":{"Authorization":"***"}`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, buf.String())
		}
	}
}

func TestEqual(t *testing.T) {
	a := parseOK(t, `{"servers": {"a": {"command": "x", "env": {"K": "v"}}}}`, nil).Servers[0]
	moved := parseOK(t, "{\"servers\": {\"z\": {\"command\": \"z\"},\n \"a\": {\"command\": \"x\", \"env\": {\"K\": \"v\"}}}}", nil).Servers[1]
	changed := parseOK(t, `{"servers": {"a": {"command": "x", "env": {"K": "w"}}}}`, nil).Servers[0]
	if !a.Equal(moved) {
		t.Errorf("Equal: a server that only moved in the file compares different")
	}
	if a.Equal(changed) {
		t.Errorf("Equal: a changed env value compares equal")
	}
	if !(ServerConfig{Args: []string{}}).Equal(ServerConfig{}) {
		t.Errorf("Equal: empty and nil args differ")
	}
}

func TestChildEnv(t *testing.T) {
	service := map[string]string{
		"PATH": "/usr/bin", "HOME": "/root", "LANG": "C.UTF-8", "TERM": "xterm",
		"OPENAI_API_KEY": "sk-x", "ELYSIA_API_KEYS": "k:alice", "AWS_SECRET_ACCESS_KEY": "aws",
	}
	cfg := ServerConfig{Env: map[string]string{"TODO_DB": "/data/todos.db", "PATH": "/opt/bin"}}
	got := ChildEnv(cfg, envMap(service))
	want := []string{"HOME=/root", "LANG=C.UTF-8", "PATH=/opt/bin", "TERM=xterm", "TODO_DB=/data/todos.db"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ChildEnv mismatch (-want +got):\n%s", diff)
	}
}
