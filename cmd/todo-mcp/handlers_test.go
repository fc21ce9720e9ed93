package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// newTestClient serves a fresh SQLite store in process and returns an
// initialized client for it; both are closed when t ends.
func newTestClient(t *testing.T, opts *serverOptions) *mcpclient.Client {
	t.Helper()
	st, err := openSQLite(t.Context(), filepath.Join(t.TempDir(), "todos.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	c, err := mcpclient.NewInProcessClient(newMCPServer(st, opts))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close client: %v", err)
		}
	})
	initialize(t, c)
	return c
}

// initialize starts c and performs the MCP handshake.
func initialize(t *testing.T, c *mcpclient.Client) {
	t.Helper()
	// The transport lives as long as the test: the SSE stream ends with the
	// ctx given to Start.
	if err := c.Start(t.Context()); err != nil {
		t.Fatalf("start client: %v", err)
	}
	var req mcp.InitializeRequest
	req.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "todo-mcp-test", Version: "1"}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("initialize: %v", err)
	}
}

// call calls tool with args and fails t on a protocol error.
func call(t *testing.T, c *mcpclient.Client, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var req mcp.CallToolRequest
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("call %s %v: %v", tool, args, err)
	}
	return res
}

// text returns the text content of res.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// structured decodes the structured content of res into a T.
func structured[T any](t *testing.T, res *mcp.CallToolResult) T {
	t.Helper()
	var v T
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode structured content %s: %v", b, err)
	}
	return v
}

// mustOK fails t unless res is a success, and returns its one todo.
func mustOK(t *testing.T, res *mcp.CallToolResult) todo {
	t.Helper()
	if res.IsError {
		t.Fatalf("unexpected isError result: %s", text(res))
	}
	return structured[oneResult](t, res).Todo
}

func TestHappyPaths(t *testing.T) {
	c := newTestClient(t, nil)

	milk := mustOK(t, call(t, c, "create_todo", map[string]any{
		"title": "Buy milk", "description": "two litres", "priority": 2,
		"tags": []string{"shopping", "home", "Shopping"}, "due_date": "2026-03-01",
	}))
	if milk.ID < 1 || milk.Title != "Buy milk" || milk.Status != statusActive || milk.Priority != 2 ||
		strings.Join(milk.Tags, ",") != "shopping,home" || deref(milk.DueDate) != "2026-03-01" || milk.CreatedAt == "" {
		t.Fatalf("create_todo returned %+v", milk)
	}
	report := mustOK(t, call(t, c, "create_todo", map[string]any{"title": "Write report", "tags": []string{"work"}}))
	if report.Priority != defaultPriority || report.DueDate != nil || report.Description != "" {
		t.Fatalf("defaults: got %+v", report)
	}
	late := mustOK(t, call(t, c, "create_todo", map[string]any{"title": "Renew passport", "due_date": "2026-09-30", "priority": 1.0}))

	listIDs := func(tool string, args map[string]any) []int64 {
		t.Helper()
		res := call(t, c, tool, args)
		if res.IsError {
			t.Fatalf("%s %v: %s", tool, args, text(res))
		}
		got := structured[manyResult](t, res)
		if got.Count != len(got.Todos) {
			t.Fatalf("%s: count %d but %d todos", tool, got.Count, len(got.Todos))
		}
		ids := make([]int64, 0, len(got.Todos))
		for _, td := range got.Todos {
			ids = append(ids, td.ID)
		}
		return ids
	}
	ids := func(ts ...todo) []int64 {
		out := []int64{}
		for _, td := range ts {
			out = append(out, td.ID)
		}
		return out
	}

	done := mustOK(t, call(t, c, "update_todo", map[string]any{"todo_id": report.ID, "status": "completed", "title": "  Write the report "}))
	if done.Status != statusCompleted || done.Title != "Write the report" || done.UpdatedAt < done.CreatedAt {
		t.Fatalf("update_todo returned %+v", done)
	}

	for _, tc := range []struct {
		name string
		tool string
		args map[string]any
		want []int64
	}{
		{"list all", "list_todos", nil, ids(milk, report, late)},
		{"list active", "list_todos", map[string]any{"status": "active"}, ids(milk, late)},
		{"list completed", "list_todos", map[string]any{"status": "completed"}, ids(report)},
		{"list priority", "list_todos", map[string]any{"priority": 2}, ids(milk)},
		{"list tag any case", "list_todos", map[string]any{"tags": []string{"SHOPPING"}}, ids(milk)},
		{"list every tag", "list_todos", map[string]any{"tags": []string{"shopping", "work"}}, ids()},
		{"list due before inclusive", "list_todos", map[string]any{"due_date_before": "2026-03-01"}, ids(milk)},
		{"list due after", "list_todos", map[string]any{"due_date_after": "2026-03-02"}, ids(late)},
		{"list due range", "list_todos", map[string]any{"due_date_after": "2026-01-01", "due_date_before": "2026-12-31"}, ids(milk, late)},
		{"search title", "search_todos", map[string]any{"query": "MILK"}, ids(milk)},
		{"search description", "search_todos", map[string]any{"query": "litres"}, ids(milk)},
		{"search wildcard is literal", "search_todos", map[string]any{"query": "%"}, ids()},
		{"search with status", "search_todos", map[string]any{"query": "r", "status": "completed"}, ids(report)},
		{"search with priority", "search_todos", map[string]any{"query": "r", "priority": 1}, ids(late)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := listIDs(tc.tool, tc.args); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("%s %v = ids %v, want %v", tc.tool, tc.args, got, tc.want)
			}
		})
	}

	res := call(t, c, "delete_todo", map[string]any{"todo_id": milk.ID})
	if gone := mustOK(t, res); gone.ID != milk.ID || !strings.Contains(text(res), "Deleted todo #") {
		t.Fatalf("delete_todo returned %+v, %q", gone, text(res))
	}
	if got := listIDs("list_todos", nil); fmt.Sprint(got) != fmt.Sprint(ids(report, late)) {
		t.Fatalf("after delete: ids %v", got)
	}
	if s := text(call(t, c, "list_todos", map[string]any{"status": "active"})); !strings.Contains(s, `"Renew passport"`) {
		t.Errorf("list text %q does not show the todo", s)
	}
}

func TestErrorResults(t *testing.T) {
	c := newTestClient(t, nil)
	td := mustOK(t, call(t, c, "create_todo", map[string]any{"title": "Exists"}))

	for _, tc := range []struct {
		name string
		tool string
		args map[string]any
		want string // the text must contain this
	}{
		{"create without title", "create_todo", map[string]any{"priority": 2}, "title: is required"},
		{"create empty title", "create_todo", map[string]any{"title": ""}, "title: must not be empty"},
		{"create blank title", "create_todo", map[string]any{"title": "   "}, "title: must not be empty"},
		{"create title not string", "create_todo", map[string]any{"title": 7}, "title: must be a string"},
		{"create priority too high", "create_todo", map[string]any{"title": "x", "priority": 9}, "priority: must be between 1 and 5"},
		{"create priority zero", "create_todo", map[string]any{"title": "x", "priority": 0}, "priority: must be between 1 and 5"},
		{"create priority fraction", "create_todo", map[string]any{"title": "x", "priority": 2.5}, "priority: must be an integer"},
		{"create priority string", "create_todo", map[string]any{"title": "x", "priority": "high"}, "priority: must be an integer"},
		{"create tags not array", "create_todo", map[string]any{"title": "x", "tags": "work"}, "tags: must be an array of strings"},
		{"create impossible date", "create_todo", map[string]any{"title": "x", "due_date": "2026-02-30"}, `due_date: "2026-02-30" is not a valid date`},
		{"create wrong date format", "create_todo", map[string]any{"title": "x", "due_date": "03/01/2026"}, "due_date:"},
		{"create unknown argument", "create_todo", map[string]any{"title": "x", "colour": "red"}, "colour: unknown argument"},
		{"list bad status", "list_todos", map[string]any{"status": "done"}, `status: must be "active" or "completed"`},
		{"list bad date", "list_todos", map[string]any{"due_date_before": "2026-13-01"}, "due_date_before:"},
		{"list empty range", "list_todos", map[string]any{"due_date_after": "2026-05-01", "due_date_before": "2026-04-01"}, "due_date_after:"},
		{"update unknown id", "update_todo", map[string]any{"todo_id": 999, "status": "completed"}, "todo_id: no todo with id 999"},
		{"update nothing", "update_todo", map[string]any{"todo_id": td.ID}, "nothing to update"},
		{"update without id", "update_todo", map[string]any{"status": "completed"}, "todo_id: is required"},
		{"update id zero", "update_todo", map[string]any{"todo_id": 0, "title": "y"}, "todo_id: must be at least 1"},
		{"update empty title", "update_todo", map[string]any{"todo_id": td.ID, "title": ""}, "title: must not be empty"},
		{"update bad status", "update_todo", map[string]any{"todo_id": td.ID, "status": "open"}, "status:"},
		{"update bad date", "update_todo", map[string]any{"todo_id": td.ID, "due_date": "2025-02-29"}, "due_date:"},
		{"search without query", "search_todos", map[string]any{}, "query: is required"},
		{"search blank query", "search_todos", map[string]any{"query": " "}, "query: must not be empty"},
		{"search bad priority", "search_todos", map[string]any{"query": "x", "priority": 6}, "priority:"},
		{"delete unknown id", "delete_todo", map[string]any{"todo_id": 999}, "todo_id: no todo with id 999"},
		{"delete id not integer", "delete_todo", map[string]any{"todo_id": "1"}, "todo_id: must be an integer"},
		{"delete without id", "delete_todo", nil, "todo_id: is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, c, tc.tool, tc.args)
			if !res.IsError {
				t.Fatalf("%s %v: want an isError result, got %q", tc.tool, tc.args, text(res))
			}
			if got := text(res); !strings.Contains(got, tc.want) {
				t.Errorf("%s %v: text %q does not contain %q", tc.tool, tc.args, got, tc.want)
			}
		})
	}

	// The todo the failed calls aimed at is unchanged.
	got := structured[manyResult](t, call(t, c, "list_todos", nil))
	if got.Count != 1 || got.Todos[0].Title != "Exists" || got.Todos[0].Status != statusActive {
		t.Errorf("after failed calls: %+v", got)
	}
}

func TestConcurrentCreates(t *testing.T) {
	c := newTestClient(t, nil)
	const n = 100
	ids := make([]int64, n)
	errs := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			var req mcp.CallToolRequest
			req.Params.Name = "create_todo"
			req.Params.Arguments = map[string]any{"title": fmt.Sprintf("todo %d", i), "tags": []string{"load"}}
			res, err := c.CallTool(ctx, req)
			switch {
			case err != nil:
				errs[i] = err.Error()
			case res.IsError:
				errs[i] = text(res)
			default:
				ids[i] = structured[oneResult](t, res).Todo.ID
			}
		})
	}
	wg.Wait()
	seen := map[int64]bool{}
	for i, id := range ids {
		if errs[i] != "" {
			t.Errorf("create %d: %s", i, errs[i])
			continue
		}
		if seen[id] {
			t.Errorf("id %d returned twice", id)
		}
		seen[id] = true
	}
	if len(seen) != n {
		t.Errorf("got %d distinct ids, want %d", len(seen), n)
	}
	if got := structured[manyResult](t, call(t, c, "list_todos", map[string]any{"tags": []string{"load"}})); got.Count != n {
		t.Errorf("list_todos counts %d, want %d", got.Count, n)
	}
}
