package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/internal/testenv"
)

// TestCLICopies: a server whose own stdio command cannot start fails over
// to its copy from the CLI, and `mcp list` shows every copy, its state and
// which one serves.
func TestCLICopies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir+"/mcp.json", fmt.Sprintf(`{"servers": {"todo": {
		"command": "./no-such-server",
		"copies": [{"command": %q, "env": {"TODO_DB": %q}}]
	}}}`, testenv.TodoMCP(t), dir+"/todos.db"))
	code, out, errOut := runCLI(t, dir, nil, "mcp", "list")
	if code != 0 {
		t.Fatalf("mcp list = %d\n%s%s", code, out, errOut)
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 4 || !strings.Contains(lines[1], "todo") || !strings.Contains(lines[1], "degraded") && !strings.Contains(lines[1], "idle") ||
		!strings.Contains(lines[2], "copy 1") || !strings.Contains(lines[2], "failed") || !strings.Contains(lines[2], "down: ") ||
		!strings.Contains(lines[3], "copy 2") || !strings.Contains(lines[3], "serving") {
		t.Errorf("mcp list =\n%s\nwant the server, then copy 1 down (its command not found) and copy 2 serving", out)
	}
	code, out, errOut = runCLI(t, dir, nil, "mcp", "call", "todo", "create_todo", `{"title": "from the copy"}`)
	if code != 0 || !strings.Contains(out, "from the copy") {
		t.Errorf("mcp call with a broken primary = %d\nstdout: %s\nstderr: %s\nwant the copy to serve it", code, out, errOut)
	}
}
