package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

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

// TestBrowserOneNamePerServer: with two servers, the page names each as
// mcp.json does, in the tree (not "Mcp todo") and on the chat's decision
// lines (not mcp_todo), and the suggested "What tools do you have?" lists
// both servers' tools.
func TestBrowserOneNamePerServer(t *testing.T) {
	s := startService(t, serveOptions{Config: twoTodoServers(t)})
	b := newBrowser(t, browserTimeout)
	b.do("open the page",
		chromedp.Navigate(s.URL+"/tree/me/names"),
		waitJS(`document.body.dataset.state === "idle"`),
		chromedp.WaitVisible(css(`#servers-status .server[data-server="chores"]`)),
	)
	names := eval[[]string](b, "gateway names", `[...document.querySelectorAll("#tree .node.gateway > .row")].map((r) => r.textContent)`)
	if len(names) != 2 || !strings.HasPrefix(names[0], "todo") || !strings.HasPrefix(names[1], "chores") || strings.Contains(strings.Join(names, " "), "cp ") {
		t.Errorf("the tree's gateways read %q; want them named todo and chores", names)
	}
	if q := eval[string](b, "the first suggestion", `document.querySelector("#chat .suggestions button").textContent`); q != "What tools do you have?" {
		t.Fatalf("the first suggestion is %q", q)
	}
	b.do("ask the suggested question",
		clickNode(`#chat .suggestions button`),
		waitJS(`document.querySelector("#chat .answer") !== null && document.body.dataset.state === "idle"`),
	)
	chosen := eval[[]string](b, "decisions", `[...document.querySelectorAll("#chat .decision .chosen")].map((c) => c.textContent)`)
	if want := []string{"todo", "chores", "text_response"}; !slices.Equal(chosen, want) {
		t.Errorf("the chat's decisions read %q; want %q", chosen, want)
	}
	answer := eval[string](b, "answer", `document.querySelector("#chat .answer").textContent`)
	for _, want := range []string{"todo (5 tools)", "chores (5 tools)", "delete_todo"} {
		if !strings.Contains(answer, want) {
			t.Errorf("the answer %q lacks %q", answer, want)
		}
	}
}
