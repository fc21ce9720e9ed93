package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/elysia-go/elysia/persist"
	"github.com/elysia-go/elysia/store"
	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
)

// todoGateway stands in for the gateway of the todo server in the tree:
// web only reads its name, description and inputs.
type todoGateway struct{}

var _ tools.Tool = todoGateway{}

func (todoGateway) Name() string { return "mcp_todo" }
func (todoGateway) Description() string {
	return "MCP server 'todo' (stdio) - provides access to multiple tools"
}
func (todoGateway) EndsRun() bool { return false }
func (todoGateway) Inputs() []tools.Input {
	return []tools.Input{{Name: "action", Type: "string", Description: "list or execute", Default: "list"}}
}
func (todoGateway) Run(context.Context, tools.Call, tools.Emitter) (tools.Result, error) {
	return tools.Result{}, errors.New("todoGateway does not run")
}

// realTrees returns a tree.Manager with the todo gateway placed, over a
// fresh SQLite file, with alice's conversation c1 saved ("Todos", one
// exchange and the appendix's event log).
func realTrees(tb testing.TB) (*tree.Manager, *persist.Store, *store.Store) {
	tb.Helper()
	db, err := store.Open(tb.Context(), filepath.Join(tb.TempDir(), "elysia.db"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	ps := persist.New(db)
	m := tree.NewManager(&tree.Options{Store: ps, Locker: db, Profiles: ps, QueryWait: 50 * time.Millisecond})
	m.SetTools([]tree.Placement{{Tool: todoGateway{}}})
	st := tree.ConversationState{UserID: "alice", ConversationID: "c1", Title: "Todos", InitMode: tree.OneBranch,
		History: []tree.Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "Hello."}}}
	if err := ps.Save(tb.Context(), st, appendixEnvelopes("alice", "c1", "q1")); err != nil {
		tb.Fatal(err)
	}
	return m, ps, db
}

// fakeServers is a goroutine-safe Servers with one server, todo.
type fakeServers struct{}

func (fakeServers) Servers(ctx context.Context) (ServersStatus, error) {
	return ServersStatus{ConfigFile: "mcp.json", Servers: []ServerStatus{{
		Name: "todo", ToolName: "mcp_todo", Transport: "stdio", Enabled: true, State: "connected",
		ToolCount: 2, Tools: []string{"create_todo", "list_todos"}, Circuit: Circuit{State: "closed"},
		Command: "./bin/todo-mcp", Env: map[string]string{"TODO_DB": "***"},
	}}}, nil
}

func (fakeServers) List(ctx context.Context, name string, q ListRequest) (ToolPage, error) {
	switch name {
	case "todo", "mcp_todo":
		if q.Cursor != "" {
			return ToolPage{}, fmt.Errorf("%w: invalid cursor %q: give a next_cursor from a previous page", tools.ErrInvalidArguments, q.Cursor)
		}
		all := []ToolInfo{
			{Name: "create_todo", Description: "Create a todo.", Inputs: json.RawMessage(`{"type":"object"}`)},
			{Name: "list_todos", Description: "List the todos.", Inputs: json.RawMessage(`{"type":"object"}`)},
		}
		page := ToolPage{Server: "todo", Tools: all, Total: len(all)}
		if q.Query != "" {
			page.Tools = all[:1]
		}
		return page, nil
	case "broken":
		return ToolPage{}, errors.New(`server "broken": connect: exec: ./bin/todo-mcp: no such file or directory`)
	}
	return ToolPage{}, fmt.Errorf("server %q: %w", name, tree.ErrNotFound)
}

func (fakeServers) Execute(ctx context.Context, name, tool string, inputs map[string]any) (ExecuteResult, error) {
	if name != "todo" && name != "mcp_todo" {
		return ExecuteResult{}, fmt.Errorf("server %q: %w", name, tree.ErrNotFound)
	}
	if tool != "create_todo" {
		return ExecuteResult{}, fmt.Errorf("%w %q: available tools are create_todo", tools.ErrUnknownTool, tool)
	}
	if p, ok := inputs["priority"].(json.Number); ok && p.String() == "9" {
		return ExecuteResult{}, &tools.ArgumentError{Tool: "create_todo", Problems: []string{"missing property 'title'", "/priority: must be <= 5"}}
	}
	return ExecuteResult{Content: []map[string]any{{"type": "text", "text": "created"}}, Structured: map[string]any{"id": 1}}, nil
}

// appendixEnvelopes is DESIGN.md's list-then-execute event sequence, with
// fixed ids.
func appendixEnvelopes(user, conv, query string) []tools.Envelope {
	raw := []struct {
		typ     tools.EventType
		id      string
		payload string
	}{
		{tools.EventStatus, "sta-1", `{"text":"Listing tools of todo..."}`},
		{tools.EventResult, "res-1", `{"type":"table","objects":[{"name":"create_todo","description":"...","inputs":{"type":"object"},"_REF_ID":"mcp_todo_list_0_0"}],"metadata":{"server":"todo","action":"list"}}`},
		{tools.EventTreeUpdate, "tre-1", `{"node":"base","tree_index":0,"decision":"mcp_todo","reasoning":"…","reset":true}`},
		{tools.EventSelfHealingError, "err-1", `{"feedback":"/priority: must be <= 5","error_message":"invalid tool_inputs for create_todo"}`},
		{tools.EventText, "tex-1", `{"type":"response","metadata":{},"objects":[{"text":"Added 'Buy milk'."}]}`},
		{tools.EventCompleted, "com-1", `{}`},
	}
	out := make([]tools.Envelope, len(raw))
	for i, r := range raw {
		out[i] = tools.Envelope{Type: r.typ, ID: r.id, UserID: user, ConversationID: conv, QueryID: query, Payload: json.RawMessage(r.payload)}
	}
	return out
}

// serverCall is one List or Execute a spyServers saw, with the request
// metadata its ctx carried.
type serverCall struct {
	action, name, tool   string
	requestID, principal string
}

// spyServers is a fakeServers that records every List and Execute; when
// fail is set, Execute returns it instead.
type spyServers struct {
	fakeServers
	mu    sync.Mutex // guards calls and fail
	calls []serverCall
	fail  error
}

func (s *spyServers) record(ctx context.Context, action, name, tool string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, serverCall{action, name, tool, RequestID(ctx), Principal(ctx)})
	return s.fail
}

func (s *spyServers) List(ctx context.Context, name string, q ListRequest) (ToolPage, error) {
	_ = s.record(ctx, "list", name, "")
	return s.fakeServers.List(ctx, name, q)
}

func (s *spyServers) Execute(ctx context.Context, name, tool string, inputs map[string]any) (ExecuteResult, error) {
	if err := s.record(ctx, "execute", name, tool); err != nil {
		return ExecuteResult{}, err
	}
	return s.fakeServers.Execute(ctx, name, tool, inputs)
}

func (s *spyServers) setFail(err error) {
	s.mu.Lock()
	s.fail = err
	s.mu.Unlock()
}

func (s *spyServers) executes() []serverCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []serverCall
	for _, c := range s.calls {
		if c.action == "execute" {
			out = append(out, c)
		}
	}
	return out
}
