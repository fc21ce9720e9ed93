package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web"
	"github.com/elysia-go/elysia/web/internal/webtest"
)

// fakeServers is a goroutine-safe Servers with one server, todo.
type fakeServers struct{}

func (fakeServers) Servers(ctx context.Context) (web.ServersStatus, error) {
	return web.ServersStatus{ConfigFile: "mcp.json", Servers: []web.ServerStatus{{
		Name: "todo", ToolName: "mcp_todo", Transport: "stdio", Enabled: true, State: "connected",
		ToolCount: 2, Tools: []string{"create_todo", "list_todos"}, Circuit: web.Circuit{State: "closed"},
		Command: "./bin/todo-mcp", Env: map[string]string{"TODO_DB": "***"},
	}}}, nil
}

func (fakeServers) List(ctx context.Context, name string, q web.ListRequest) (web.ToolPage, error) {
	switch name {
	case "todo", "mcp_todo":
		if q.Cursor != "" {
			return web.ToolPage{}, fmt.Errorf("%w: invalid cursor %q: give a next_cursor from a previous page", tools.ErrInvalidArguments, q.Cursor)
		}
		all := []web.ToolInfo{
			{Name: "create_todo", Description: "Create a todo.", Inputs: json.RawMessage(`{"type":"object"}`)},
			{Name: "list_todos", Description: "List the todos.", Inputs: json.RawMessage(`{"type":"object"}`)},
		}
		page := web.ToolPage{Server: "todo", Tools: all, Total: len(all)}
		if q.Query != "" {
			page.Tools = all[:1]
		}
		return page, nil
	case "broken":
		return web.ToolPage{}, errors.New(`server "broken": connect: exec: ./bin/todo-mcp: no such file or directory`)
	}
	return web.ToolPage{}, fmt.Errorf("server %q: %w", name, tree.ErrNotFound)
}

func (fakeServers) Execute(ctx context.Context, name, tool string, inputs map[string]any) (web.ExecuteResult, error) {
	if name != "todo" && name != "mcp_todo" {
		return web.ExecuteResult{}, fmt.Errorf("server %q: %w", name, tree.ErrNotFound)
	}
	if tool != "create_todo" {
		return web.ExecuteResult{}, fmt.Errorf("%w %q: available tools are create_todo", tools.ErrUnknownTool, tool)
	}
	if p, ok := inputs["priority"].(json.Number); ok && p.String() == "9" {
		return web.ExecuteResult{}, &tools.ArgumentError{Tool: "create_todo", Problems: []string{"missing property 'title'", "/priority: must be <= 5"}}
	}
	return web.ExecuteResult{Content: []map[string]any{{"type": "text", "text": "created"}}, Structured: map[string]any{"id": 1}}, nil
}

// fakeRunner is a goroutine-safe Runner whose behaviour is chosen by the
// query text: "busy" is refused, "slowbusy" is refused after waiting a
// while (as a query waits for a busy conversation), "block" emits one event
// and runs until cancelled or released, "linger" emits the appendix
// sequence and then runs until cancelled or released (as a runner still
// tidying up after completed), "fail" fails after one event, "flood" holds
// its conversation and emits large text events until cancelled (any query
// on that conversation meanwhile is refused as busy), anything else emits
// the appendix sequence.
type fakeRunner struct {
	started   chan string // receives the query id of each "block" and "flood" run
	cancelled chan string // receives the query id of each cancelled "block" and "flood" run
	release   chan struct{}
	// plain, set before use, makes every query emit the appendix sequence.
	plain bool

	mu sync.Mutex // guards flooding
	// flooding holds the conversations a "flood" run holds.
	flooding map[string]bool
}

func newFakeRunner() *fakeRunner {
	return &fakeRunner{started: make(chan string, 8), cancelled: make(chan string, 8), release: make(chan struct{}),
		flooding: map[string]bool{}}
}

// floodText is the size of a "flood" run's text, enough for a few events
// to fill a connection's socket buffers.
const floodText = 256 << 10

func (f *fakeRunner) RunQuery(ctx context.Context, user, conv, queryID, query string, emit func(tools.Envelope)) error {
	if f.plain {
		query = ""
	}
	f.mu.Lock()
	busy := f.flooding[conv]
	if !busy && query == "flood" {
		f.flooding[conv] = true
	}
	f.mu.Unlock()
	if busy {
		return fmt.Errorf("conversation %s: %w", conv, tree.ErrBusy)
	}
	switch query {
	case "flood":
		env := tools.Envelope{Type: tools.EventText, ID: "tex-flood", UserID: user, ConversationID: conv, QueryID: queryID,
			Payload: json.RawMessage(`{"type":"response","metadata":{},"objects":[{"text":"` + strings.Repeat("x", floodText) + `"}]}`)}
		f.started <- queryID
		for ctx.Err() == nil {
			emit(env)
		}
		// The conversation is free before the run reports its end, as a
		// real runner frees it before RunQuery returns.
		f.mu.Lock()
		delete(f.flooding, conv)
		f.mu.Unlock()
		f.cancelled <- queryID
		return ctx.Err()
	case "busy":
		return fmt.Errorf("conversation %s: %w", conv, tree.ErrBusy)
	case "slowbusy":
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond): // several heartbeats
		}
		return fmt.Errorf("conversation %s: %w", conv, tree.ErrBusy)
	case "block":
		emit(webtest.AppendixEnvelopes(user, conv, queryID)[0])
		f.started <- queryID
		select {
		case <-ctx.Done():
			f.cancelled <- queryID
			return ctx.Err()
		case <-f.release:
			emit(webtest.AppendixEnvelopes(user, conv, queryID)[5])
			return nil
		}
	case "linger":
		for _, env := range webtest.AppendixEnvelopes(user, conv, queryID) {
			emit(env)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-f.release:
			return nil
		}
	case "fail":
		emit(webtest.AppendixEnvelopes(user, conv, queryID)[0])
		return errors.New("model provider: 500 secret detail")
	}
	for _, env := range webtest.AppendixEnvelopes(user, conv, queryID) {
		emit(env)
	}
	return nil
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
	s.calls = append(s.calls, serverCall{action, name, tool, web.RequestID(ctx), web.Principal(ctx)})
	return s.fail
}

func (s *spyServers) List(ctx context.Context, name string, q web.ListRequest) (web.ToolPage, error) {
	_ = s.record(ctx, "list", name, "")
	return s.fakeServers.List(ctx, name, q)
}

func (s *spyServers) Execute(ctx context.Context, name, tool string, inputs map[string]any) (web.ExecuteResult, error) {
	if err := s.record(ctx, "execute", name, tool); err != nil {
		return web.ExecuteResult{}, err
	}
	return s.fakeServers.Execute(ctx, name, tool, inputs)
}
