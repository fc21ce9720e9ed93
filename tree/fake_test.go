package tree

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/elysia-go/elysia/tools"
)

// step is one scripted model answer.
type step struct {
	call    string // function name; "" means a text-only answer
	args    string // JSON arguments of call
	content string
	err     error
}

// fakeModel is a goroutine-safe scripted llms.Model. It answers with its
// steps in order, then repeats last (or fails when last is nil).
type fakeModel struct {
	mu      sync.Mutex
	steps   []step
	last    *step
	calls   int
	offered [][]string          // function names offered per call
	params  []map[string]string // each call's function parameters (JSON) by name
	prompts []string            // the human message of each call
	systems []string            // the system message of each call
	block   chan struct{}       // when set, calls wait for it to close
	entered chan struct{}       // when set, receives once per blocked call
}

var _ llms.Model = (*fakeModel)(nil)

func script(steps ...step) *fakeModel { return &fakeModel{steps: steps} }

func (m *fakeModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	var o llms.CallOptions
	for _, opt := range opts {
		opt(&o)
	}
	var names []string
	params := map[string]string{}
	for _, t := range o.Tools {
		names = append(names, t.Function.Name)
		b, err := json.Marshal(t.Function.Parameters)
		if err != nil {
			return nil, err
		}
		params[t.Function.Name] = string(b)
	}
	var human, system string
	for _, msg := range msgs {
		switch msg.Role {
		case llms.ChatMessageTypeHuman:
			human = fmt.Sprint(msg.Parts[0])
		case llms.ChatMessageTypeSystem:
			system = fmt.Sprint(msg.Parts[0])
		}
	}
	m.mu.Lock()
	m.calls++
	m.offered = append(m.offered, names)
	m.params = append(m.params, params)
	m.prompts = append(m.prompts, human)
	m.systems = append(m.systems, system)
	var s step
	switch {
	case len(m.steps) > 0:
		s, m.steps = m.steps[0], m.steps[1:]
	case m.last != nil:
		s = *m.last
	default:
		m.mu.Unlock()
		return nil, errors.New("fake model: script exhausted")
	}
	block := m.block
	m.mu.Unlock()
	if block != nil {
		if m.entered != nil {
			m.entered <- struct{}{}
		}
		select {
		case <-block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if s.err != nil {
		return nil, s.err
	}
	ch := &llms.ContentChoice{Content: s.content}
	if s.call != "" {
		ch.ToolCalls = []llms.ToolCall{{ID: "call", Type: "function",
			FunctionCall: &llms.FunctionCall{Name: s.call, Arguments: s.args}}}
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{ch}}, nil
}

func (m *fakeModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

func (m *fakeModel) callCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

// fakeGateway behaves like an MCP gateway: list, then execute create_todo.
type fakeGateway struct {
	name string
	desc string
	mu   sync.Mutex
	runs int
}

var (
	_ tools.Tool        = (*fakeGateway)(nil)
	_ tools.StatusLiner = (*fakeGateway)(nil)
)

func gateway(server string) *fakeGateway {
	return &fakeGateway{name: "mcp_" + server,
		desc: "MCP server '" + server + "' (stdio) - provides access to multiple tools"}
}

func (g *fakeGateway) Name() string        { return g.name }
func (g *fakeGateway) Description() string { return g.desc }
func (g *fakeGateway) EndsRun() bool       { return false }
func (g *fakeGateway) Inputs() []tools.Input {
	return []tools.Input{
		{Name: "action", Type: "string", Description: "list or execute", Default: "list", Enum: []string{"list", "execute"}},
		{Name: "tool_name", Type: "string", Description: "the tool to execute"},
		{Name: "tool_inputs", Type: "object", Description: "the tool's inputs", Default: map[string]any{}},
	}
}

func (g *fakeGateway) StatusLine(args map[string]any) string {
	if args["action"] == "execute" {
		return fmt.Sprintf("Running %v...", args["tool_name"])
	}
	return "Listing tools of " + g.name + "..."
}

func (g *fakeGateway) Run(ctx context.Context, call tools.Call, emit tools.Emitter) (tools.Result, error) {
	g.mu.Lock()
	g.runs++
	g.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return tools.Result{}, err
	}
	md := map[string]any{"server": g.name, "action": call.Args["action"]}
	if call.Args["action"] != "execute" {
		return tools.Result{Name: "list", Objects: []map[string]any{
			{"name": "create_todo", "description": "Create a todo", "inputs": map[string]any{"type": "object"}},
		}, Metadata: md, LLMText: "listed 1 tool"}, nil
	}
	in, _ := call.Args["tool_inputs"].(map[string]any)
	title, _ := in["title"].(string)
	if title == "" {
		return tools.ErrorResult("invalid tool_inputs for create_todo", "missing property 'title'"), nil
	}
	return tools.Result{Name: "create_todo", Objects: []map[string]any{{"title": title}}, Metadata: md}, nil
}

// memStore is a goroutine-safe in-memory Store.
type memStore struct {
	mu     sync.Mutex
	states map[string][]byte
	events map[string][]tools.Envelope
	saves  int
	onSave func()
	// beforeSave, when set, is called at the start of every Save, before
	// the state is stored; a test blocks in it to hold a save in flight.
	beforeSave func(ConversationState)
	// afterLoad, when set, is called by Load after it has read a saved
	// state, and beforeDelete at the start of Delete; tests block in them
	// to hold a load or a delete in flight.
	afterLoad    func()
	beforeDelete func()
	// failSaves makes Save fail while it is set.
	failSaves atomic.Bool
}

var (
	_ Store        = (*memStore)(nil)
	_ StoreDeleter = (*memStore)(nil)
)

func newMemStore() *memStore {
	return &memStore{states: map[string][]byte{}, events: map[string][]tools.Envelope{}}
}

func (s *memStore) Load(_ context.Context, user, conv string) (ConversationState, bool, error) {
	s.mu.Lock()
	b, ok := s.states[user+"/"+conv]
	s.mu.Unlock()
	if !ok {
		return ConversationState{}, false, nil
	}
	var st ConversationState
	err := json.Unmarshal(b, &st)
	if s.afterLoad != nil {
		s.afterLoad()
	}
	return st, true, err
}

func (s *memStore) Save(_ context.Context, st ConversationState, events []tools.Envelope) error {
	if s.beforeSave != nil {
		s.beforeSave(st)
	}
	if s.failSaves.Load() {
		return errors.New("mem store: save failed")
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	s.mu.Lock()
	k := st.UserID + "/" + st.ConversationID
	s.states[k] = b
	s.events[k] = append(s.events[k], events...)
	s.saves++
	f := s.onSave
	s.mu.Unlock()
	if f != nil {
		f()
	}
	return nil
}

func (s *memStore) Delete(_ context.Context, user, conv string) error {
	if s.beforeDelete != nil {
		s.beforeDelete()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.states, user+"/"+conv)
	delete(s.events, user+"/"+conv)
	return nil
}

// stored returns the saved state of user/conv, and how many events it has.
func (s *memStore) stored(t *testing.T, user, conv string) (st ConversationState, ok bool, events int) {
	t.Helper()
	st, ok, err := s.Load(t.Context(), user, conv)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return st, ok, len(s.events[user+"/"+conv])
}

// runBlocked starts a query on c whose model waits to answer, and returns
// once the model has been called; finish lets it answer and returns the
// query's error.
func runBlocked(t *testing.T, c *Conversation) (finish func() error) {
	t.Helper()
	model := script(step{call: "text_response", args: `{"text":"late"}`})
	model.block = make(chan struct{})
	model.entered = make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() { done <- c.Run(t.Context(), model, "slow", "", nil) }()
	<-model.entered
	return func() error {
		close(model.block)
		return <-done
	}
}
