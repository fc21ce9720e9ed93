package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
)

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
