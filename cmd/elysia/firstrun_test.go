package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/internal/testenv"
)

// twoTodoServers is an mcp.json with two todo servers, "todo" and
// "chores", each on its own database.
func twoTodoServers(tb testing.TB) string {
	tb.Helper()
	bin := testenv.TodoMCP(tb)
	return fmt.Sprintf(`{"servers": {
  "todo": {"type": "stdio", "command": %q, "env": {"TODO_DB": "./data/todos.db"}, "cwd": "."},
  "chores": {"type": "stdio", "command": %q, "env": {"TODO_DB": "./data/chores.db"}, "cwd": "."}}}`, bin, bin)
}

// TestQueryWhatTools: the suggested first question, asked of the offline
// planner in the terminal with two servers, lists both servers' tools, each
// on its own line, and the terminal names each server as mcp.json does,
// never by its gateway's tool id.
func TestQueryWhatTools(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "mcp.json"), twoTodoServers(t))
	code, out, errOut := runCLI(t, dir, nil, "query", "What tools do you have?")
	if code != 0 {
		t.Fatalf("query: exit %d\n%s%s", code, out, errOut)
	}
	tools := "create_todo, list_todos, update_todo, search_todos, delete_todo"
	for _, want := range []string{"→ base: todo (", "→ base: chores (", "Listing the tools of todo", "Listing the tools of chores",
		"\n- todo (5 tools): " + tools, "\n- chores (5 tools): " + tools} {
		if !strings.Contains(out, want) {
			t.Errorf("query printed no %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "no tool matched") || strings.Contains(out, "mcp_") {
		t.Errorf("query's output names a gateway by its id or misses the question:\n%s", out)
	}
}
