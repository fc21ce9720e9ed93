package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/internal/testenv"
)

// TestClientDialects: a config pasted from Zed (context_servers, its
// command object and its remote url) or from opencode (mcp, local with a
// command array and environment, remote, and its second version under
// "servers") loads in elysia and connects: `elysia mcp call` creates a
// todo through it. A file with servers in no known shape is a usage error
// naming the shapes, not a service started with nothing.
func TestClientDialects(t *testing.T) {
	t.Parallel()
	bin := testenv.TodoMCP(t)
	url := testenv.TodoHTTP(t, "http")
	for _, tt := range []struct {
		name, config string
		tool         string // a tool the server lists only with the args given
	}{
		{"zed command object", fmt.Sprintf(`{"theme": "One Dark", "context_servers": {"todo": {"source": "custom",
			"command": {"path": %q, "args": [], "env": {"TODO_DB": "./zed.db"}}, "settings": {}}}}`, bin), ""},
		{"zed command string", fmt.Sprintf(`{"context_servers": {"todo": {"command": %q, "args": ["--fault-tools"], "env": {"TODO_DB": "./zed2.db"}}}}`, bin), "fault"},
		{"zed remote", fmt.Sprintf(`{"context_servers": {"todo": {"url": %q, "headers": {"X-Test": "zed"}}}}`, url), ""},
		{"opencode local", fmt.Sprintf(`{"$schema": "https://opencode.ai/config.json", "mcp": {"todo": {"type": "local",
			"command": [%q, "--fault-tools"], "environment": {"TODO_DB": "./opencode.db"}, "enabled": true}}}`, bin), "fault"},
		{"opencode remote", fmt.Sprintf(`{"mcp": {"todo": {"type": "remote", "url": %q, "enabled": true, "oauth": false}}}`, url), ""},
		{"opencode servers", fmt.Sprintf(`{"mcp": {"servers": {"todo": {"type": "local", "command": [%q], "environment": {"TODO_DB": "./v2.db"}}}}}`, bin), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cfg := filepath.Join(dir, "settings.json")
			writeFile(t, cfg, tt.config)
			title := "from " + tt.name
			code, out, errOut := runCLI(t, dir, nil, "mcp", "call", "--config", cfg, "todo", "create_todo", fmt.Sprintf(`{"title": %q}`, title))
			if code != 0 || !strings.Contains(out, title) {
				t.Errorf("mcp call through %s: exit %d\n%s%s", tt.name, code, out, errOut)
			}
			if tt.tool != "" {
				if code, out, errOut := runCLI(t, dir, nil, "mcp", "list", "--config", cfg, "todo"); code != 0 || !strings.Contains(out, tt.tool+"(") {
					t.Errorf("mcp list through %s: exit %d, want %s listed (the args given)\n%s%s", tt.name, code, tt.tool, out, errOut)
				}
			}
			if code, out, errOut := runCLI(t, dir, nil, "config", "check", cfg); code != 0 {
				t.Errorf("config check of %s: exit %d\n%s%s", tt.name, code, out, errOut)
			}
		})
	}

	t.Run("no known shape", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		cfg := filepath.Join(dir, "settings.json")
		writeFile(t, cfg, `{"theme": "One Dark", "mcp_servers": {"todo": {"command": "x"}}}`)
		for _, args := range [][]string{{"config", "check", cfg}, {"mcp", "list", "--config", cfg}, {"serve", "--addr", "127.0.0.1:0", "--db", "-", "--config", cfg}} {
			code, out, errOut := runCLI(t, dir, nil, args...)
			if code != exitUsage || !strings.Contains(errOut, "no servers") || !strings.Contains(errOut, `"context_servers" (Zed)`) ||
				!strings.Contains(errOut, `"mcp" (opencode)`) || !strings.Contains(errOut, `"mcpServers"`) {
				t.Errorf("elysia %s on a file without servers: exit %d, want %d naming the shapes\n%s%s", args[0], code, exitUsage, out, errOut)
			}
		}
	})
}
