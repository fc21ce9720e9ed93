package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/elysia-go/elysia/tools"
)

// fakeTrees is a goroutine-safe Trees and Catalog keeping one tree JSON per
// conversation.
type fakeTrees struct {
	mu  sync.Mutex // guards ops
	ops []TreeOp
}

const fakeTree = `{"name":"Base","id":"base","description":"","instruction":"Choose a base-level task.","reasoning":"","branch":true,"options":{"text_response":{"name":"Text response","id":"text_response","description":"Answer.","instruction":"","reasoning":"","branch":false,"options":{}},"mcp_todo":{"name":"Mcp todo","id":"mcp_todo","description":"MCP server 'todo' (stdio) - provides access to multiple tools","instruction":"","reasoning":"","branch":false,"options":{}}}}`

func (f *fakeTrees) TreeJSON(ctx context.Context, user, conv string) (json.RawMessage, error) {
	if conv == "boom" {
		return nil, errors.New("database is on fire: secret detail")
	}
	return json.RawMessage(fakeTree), nil
}

func (f *fakeTrees) InitTree(ctx context.Context, user, conv, mode string) (json.RawMessage, error) {
	switch mode {
	case "", "one_branch", "multi_branch", "empty":
		return json.RawMessage(fakeTree), nil
	}
	return nil, fmt.Errorf("%w: unknown branch_initialisation %q (want one_branch, multi_branch or empty)", ErrInvalidInput, mode)
}

func (f *fakeTrees) ApplyOp(ctx context.Context, user string, op TreeOp) (json.RawMessage, error) {
	f.mu.Lock()
	f.ops = append(f.ops, op)
	f.mu.Unlock()
	if op.ToolName == "nope" {
		return nil, fmt.Errorf("%w: no tool %q", tools.ErrUnknownTool, op.ToolName)
	}
	if op.BranchID == "missing" || op.ID == "missing" {
		return nil, fmt.Errorf("branch %q: %w", "missing", ErrNotFound)
	}
	return json.RawMessage(fakeTree), nil
}

func (f *fakeTrees) lastOp() TreeOp {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ops[len(f.ops)-1]
}

func (f *fakeTrees) AvailableTools(ctx context.Context) (any, error) {
	return map[string]any{
		"text_response": map[string]any{"name": "text_response", "description": "Answer.", "inputs": map[string]any{}, "end": true},
		"mcp_todo":      map[string]any{"name": "mcp_todo", "description": "MCP server 'todo'", "inputs": map[string]any{}, "end": false},
	}, nil
}

// fakeStore is a goroutine-safe Conversations and Users.
type fakeStore struct {
	mu    sync.Mutex // guards users
	users map[string]bool
}

func (f *fakeStore) List(ctx context.Context, user string) (any, error) {
	if user == "nobody" {
		return []map[string]any{}, nil
	}
	return []map[string]any{{"conversation_id": "c1", "title": "Todos", "updated_at": "2026-11-22T10:00:00Z"}}, nil
}

func (f *fakeStore) Get(ctx context.Context, user, conv string) (any, error) {
	if conv != "c1" {
		return nil, fmt.Errorf("conversation %q: %w", conv, ErrNotFound)
	}
	return map[string]any{"title": "Todos", "history": []any{map[string]any{"role": "user", "content": "hi"}}, "events": []any{}}, nil
}

func (f *fakeStore) Delete(ctx context.Context, user, conv string) error {
	if conv != "c1" {
		return fmt.Errorf("conversation %q: %w", conv, ErrNotFound)
	}
	return nil
}

func (f *fakeStore) InitUser(ctx context.Context, user string) (bool, any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.users == nil {
		f.users = map[string]bool{}
	}
	existed := f.users[user]
	f.users[user] = true
	return existed, map[string]any{"settings": map[string]any{"model": "offline"}}, nil
}

// fakeServers is a goroutine-safe Servers with one server, todo.
type fakeServers struct{}

func (fakeServers) Servers(ctx context.Context) (ServersStatus, error) {
	return ServersStatus{ConfigFile: "mcp.json", Servers: []map[string]any{{
		"name": "todo", "tool_name": "mcp_todo", "transport": "stdio", "enabled": true, "state": "connected",
		"env": map[string]string{"TODO_DB": "***"},
	}}}, nil
}

func (fakeServers) List(ctx context.Context, name string, q ListRequest) (any, error) {
	switch name {
	case "todo", "mcp_todo":
		if q.Cursor != "" {
			return nil, fmt.Errorf("%w: invalid cursor %q: give a next_cursor from a previous page", ErrInvalidInput, q.Cursor)
		}
		return map[string]any{"query": q.Query, "tools": []any{map[string]any{"name": "create_todo", "description": "Create a todo.", "inputs": map[string]any{"type": "object"}}}}, nil
	case "broken":
		return nil, errors.New(`server "broken": connect: exec: ./bin/todo-mcp: no such file or directory`)
	}
	return nil, fmt.Errorf("server %q: %w", name, ErrNotFound)
}

func (fakeServers) Execute(ctx context.Context, name, tool string, inputs map[string]any) (any, error) {
	if name != "todo" && name != "mcp_todo" {
		return nil, fmt.Errorf("server %q: %w", name, ErrNotFound)
	}
	if tool != "create_todo" {
		return nil, fmt.Errorf("%w %q: available tools are create_todo", tools.ErrUnknownTool, tool)
	}
	if p, ok := inputs["priority"].(json.Number); ok && p.String() == "9" {
		return nil, &tools.ArgumentError{Tool: "create_todo", Problems: []string{"missing property 'title'", "/priority: must be <= 5"}}
	}
	return map[string]any{"is_error": false, "content": []any{map[string]any{"type": "text", "text": "created"}}, "structured": map[string]any{"id": 1}}, nil
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
		return fmt.Errorf("conversation %s: %w", conv, ErrBusy)
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
		return fmt.Errorf("conversation %s: %w", conv, ErrBusy)
	case "slowbusy":
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond): // several heartbeats
		}
		return fmt.Errorf("conversation %s: %w", conv, ErrBusy)
	case "block":
		emit(appendixEnvelopes(user, conv, queryID)[0])
		f.started <- queryID
		select {
		case <-ctx.Done():
			f.cancelled <- queryID
			return ctx.Err()
		case <-f.release:
			emit(appendixEnvelopes(user, conv, queryID)[5])
			return nil
		}
	case "linger":
		for _, env := range appendixEnvelopes(user, conv, queryID) {
			emit(env)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-f.release:
			return nil
		}
	case "fail":
		emit(appendixEnvelopes(user, conv, queryID)[0])
		return errors.New("model provider: 500 secret detail")
	}
	for _, env := range appendixEnvelopes(user, conv, queryID) {
		emit(env)
	}
	return nil
}

// spyStore is a fakeStore that records the conversations it is asked to
// delete, so tests can tell that a refused request changed nothing.
type spyStore struct {
	fakeStore
	mu      sync.Mutex // guards deleted
	deleted []string
}

func (s *spyStore) Delete(ctx context.Context, user, conv string) error {
	s.mu.Lock()
	s.deleted = append(s.deleted, user+"/"+conv)
	s.mu.Unlock()
	return s.fakeStore.Delete(ctx, user, conv)
}

func (s *spyStore) deletes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.deleted...)
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

func (s *spyServers) List(ctx context.Context, name string, q ListRequest) (any, error) {
	_ = s.record(ctx, "list", name, "")
	return s.fakeServers.List(ctx, name, q)
}

func (s *spyServers) Execute(ctx context.Context, name, tool string, inputs map[string]any) (any, error) {
	if err := s.record(ctx, "execute", name, tool); err != nil {
		return nil, err
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
