package mcpconfig

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseDialects(t *testing.T) {
	t.Parallel()
	stdio := func(name, cmd string, args []string, env map[string]string) ServerConfig {
		return ServerConfig{Name: name, Transport: TransportStdio, Command: cmd, Args: args, Env: env, Enabled: true}
	}
	remote := func(name, url string, headers map[string]string) ServerConfig {
		return ServerConfig{Name: name, Transport: TransportHTTP, URL: url, Headers: headers, Enabled: true}
	}
	for _, tt := range []struct {
		name, src string
		want      []ServerConfig
	}{
		{"zed, command object", `{"theme": "One Dark", "context_servers": {
			"files": {"source": "custom", "command": {"path": "npx", "args": ["-y", "srv"], "env": {"K": "v"}}, "settings": {}}}}`,
			[]ServerConfig{stdio("files", "npx", []string{"-y", "srv"}, map[string]string{"K": "v"})}},
		{"zed, command string", `{"context_servers": {"files": {"command": "npx", "args": ["srv"], "env": {}, "enabled": true}}}`,
			[]ServerConfig{stdio("files", "npx", []string{"srv"}, map[string]string{})}},
		{"zed, remote", `{"context_servers": {"docs": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer t"}}}}`,
			[]ServerConfig{remote("docs", "https://example.com/mcp", map[string]string{"Authorization": "Bearer t"})}},
		{"opencode, local and remote", `{"$schema": "https://opencode.ai/config.json", "mcp": {
			"files": {"type": "local", "command": ["bun", "x", "srv"], "environment": {"K": "v"}, "enabled": true},
			"docs": {"type": "remote", "url": "https://example.com/mcp", "headers": {"X": "y"}, "oauth": false}}}`,
			[]ServerConfig{stdio("files", "bun", []string{"x", "srv"}, map[string]string{"K": "v"}), remote("docs", "https://example.com/mcp", map[string]string{"X": "y"})}},
		{"opencode, a command alone", `{"mcp": {"files": {"type": "local", "command": ["srv"]}}}`,
			[]ServerConfig{stdio("files", "srv", nil, nil)}},
		{"opencode v2, under servers", `{"mcp": {"servers": {"files": {"type": "local", "command": ["srv", "a"], "disabled": true}}}}`,
			[]ServerConfig{func() ServerConfig { s := stdio("files", "srv", []string{"a"}, nil); s.Enabled = false; return s }()}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := parseOK(t, tt.src, nil)
			var got []ServerConfig
			for _, s := range cfg.Servers {
				got = append(got, ServerConfig{Name: s.Name, Transport: s.Transport, Command: s.Command, Args: s.Args, Env: s.Env,
					URL: s.URL, Headers: s.Headers, Enabled: s.Enabled})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("servers (-want +got):\n%s", diff)
			}
		})
	}

	cfg := parseOK(t, `{"mcp": {"files": {"type": "local", "command": ["srv"], "timeout": 2500}}}`, nil)
	if got := cfg.Servers[0].ConnectTimeout; got != 2500*time.Millisecond {
		t.Errorf("opencode timeout 2500 ms: connect_timeout %v", got)
	}
	for _, w := range cfg.Warnings {
		t.Errorf("warning for an opencode file: %s", w)
	}
}

func TestParseDialectErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, src, want string }{
		{"no known shape", `{"theme": "One Dark"}`, `mcp.json:1:1: no servers: want one of "servers" (VS Code`},
		{"empty object", `{}`, `"context_servers" (Zed), "mcp" (opencode)`},
		{"zed command without path", `{"context_servers": {"a": {"command": {"args": []}}}}`, `mcp.json:1:39: server "a": command has no "path"`},
		{"zed args twice", `{"context_servers": {"a": {"command": {"path": "x", "args": []}, "args": []}}}`, `server "a": args given twice`},
		{"zed block not an object", `{"context_servers": []}`, `context_servers must be an object, got an array`},
		{"opencode empty command", `{"mcp": {"a": {"type": "local", "command": []}}}`, `mcp.json:1:44: server "a": command is an empty array`},
		{"opencode command not strings", `{"mcp": {"a": {"type": "local", "command": ["x", 1]}}}`, `server "a": args must be an array of strings, got a number in it`},
		{"opencode unknown type", `{"mcp": {"a": {"type": "cloud", "url": "https://x"}}}`, `unknown type "cloud"`},
		{"opencode bad timeout", `{"mcp": {"a": {"type": "local", "command": ["x"], "timeout": "5s"}}}`, `timeout must be a number of milliseconds`},
		{"opencode environment and env", `{"mcp": {"a": {"command": ["x"], "environment": {}, "env": {}}}}`, `give one of environment and env`},
		{"opencode no command nor url", `{"mcp": {"a": {"type": "local"}}}`, `server "a"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("mcp.json", []byte(tt.src), &LoadOptions{LookupEnv: envMap(nil), BaseDir: "/base"})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse(%s) = %v, want an error with %q", tt.src, err, tt.want)
			}
		})
	}
}
