package tree

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/elysia-go/elysia/tools"
)

// todoGateway is a gateway whose list result is the size and shape of the
// todo server's (five tools with their input schemas, some 3 KB), so that
// long-conversation prompts carry what real ones carry.
type todoGateway struct{ fakeGateway }

func newTodoGateway() *todoGateway {
	return &todoGateway{fakeGateway: *gateway("todo")}
}

// todoTools is the todo server's listing, as the gateway returns it.
var todoTools = func() []map[string]any {
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	prio := map[string]any{"type": "integer", "minimum": 1, "maximum": 5, "description": "Priority from 1 (lowest) to 5 (highest)"}
	status := map[string]any{"type": "string", "enum": []any{"active", "completed"}, "description": "Status of the todo"}
	tags := map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Tags attached to the todo"}
	schema := func(req []any, props map[string]any) map[string]any {
		return map[string]any{"type": "object", "properties": props, "required": req}
	}
	return []map[string]any{
		{"name": "create_todo", "description": "Create a new todo item with a title, optional description, priority, tags and due date",
			"inputs": schema([]any{"title"}, map[string]any{"title": str("Title of the todo"), "description": str("Longer description"),
				"priority": prio, "tags": tags, "due_date": str("Due date, YYYY-MM-DD")})},
		{"name": "list_todos", "description": "List todo items, optionally filtered by status, priority or tag",
			"inputs": schema([]any{}, map[string]any{"status": status, "priority": prio, "tag": str("Only todos with this tag")})},
		{"name": "update_todo", "description": "Update fields of an existing todo item by its id",
			"inputs": schema([]any{"id"}, map[string]any{"id": map[string]any{"type": "integer", "description": "Id of the todo"},
				"title": str("New title"), "description": str("New description"), "priority": prio, "status": status, "tags": tags,
				"due_date": str("New due date, YYYY-MM-DD")})},
		{"name": "search_todos", "description": "Search todo items whose title or description contains the query",
			"inputs": schema([]any{"query"}, map[string]any{"query": str("Text to search for")})},
		{"name": "delete_todo", "description": "Delete a todo item by its id",
			"inputs": schema([]any{"id"}, map[string]any{"id": map[string]any{"type": "integer", "description": "Id of the todo"}})},
	}
}()

func (g *todoGateway) Run(ctx context.Context, call tools.Call, emit tools.Emitter) (tools.Result, error) {
	if err := ctx.Err(); err != nil {
		return tools.Result{}, err
	}
	md := map[string]any{"server": "todo", "action": call.Args["action"]}
	if call.Args["action"] != "execute" {
		return tools.Result{Name: "list", Objects: todoTools, Metadata: md, LLMText: "listed 5 tools"}, nil
	}
	in, _ := call.Args["tool_inputs"].(map[string]any)
	return tools.Result{Name: "create_todo", Objects: []map[string]any{{"id": len(fmt.Sprint(in)), "title": in["title"],
		"priority": 2, "status": "active", "tags": []any{}, "created_at": "2026-11-23T10:00:00Z"}}, Metadata: md}, nil
}

// cycleModel answers each query with list, execute create_todo, answer;
// it keeps the sizes of the last query's prompts. It is safe for
// concurrent use, though a conversation runs one query at a time.
type cycleModel struct {
	mu    sync.Mutex
	n     int
	title string
	// prompts are the bytes of the current query's decisions: everything
	// the model is sent (the messages' text and the functions offered, as
	// JSON), and contexts those of the human message alone.
	prompts, contexts []int
}

func (m *cycleModel) GenerateContent(_ context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	var o llms.CallOptions
	for _, opt := range opts {
		opt(&o)
	}
	size, human := 0, 0
	for _, msg := range msgs {
		n := len(msg.Parts[0].(llms.TextContent).Text)
		size += n
		if msg.Role == llms.ChatMessageTypeHuman {
			human += n
		}
	}
	fns, err := json.Marshal(o.Tools)
	if err != nil {
		return nil, err
	}
	size += len(fns)
	m.mu.Lock()
	defer m.mu.Unlock()
	step := m.n % 3
	m.n++
	if step == 0 {
		m.prompts, m.contexts = m.prompts[:0], m.contexts[:0]
	}
	m.prompts, m.contexts = append(m.prompts, size), append(m.contexts, human)
	var name, args string
	switch step {
	case 0:
		name, args = "mcp_todo", `{"action":"list"}`
	case 1:
		name, args = "mcp_todo", fmt.Sprintf(`{"action":"execute","tool_name":"create_todo","tool_inputs":{"title":%q,"priority":2}}`, m.title)
	default:
		name, args = "text_response", fmt.Sprintf(`{"text":"Created the todo '%s' with priority 2; it is active and has no tags or due date."}`, m.title)
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "Working on it.",
		ToolCalls: []llms.ToolCall{{ID: "call", Type: "function", FunctionCall: &llms.FunctionCall{Name: name, Arguments: args}}}}}}, nil
}

func (m *cycleModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

// query sets the title of the next query and returns its text.
func (m *cycleModel) query(i int) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.title = fmt.Sprintf("Buy milk and bread, batch %d", i)
	return fmt.Sprintf("create a todo titled %q with priority=2 and remind me about it", m.title)
}

func (m *cycleModel) promptSizes() (prompts, contexts []int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.prompts), slices.Clone(m.contexts)
}

// cpuTime is the process's user plus system CPU time.
func cpuTime(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLongConversation runs the 1st, 50th, 100th and 1,000th query of one
// conversation (list, execute create_todo, answer, with an instant model)
// and reports the decision prompt's bytes (prompt-B/decision and
// max-prompt-B: the mean and largest of the query's three decisions, counting
// all the model is sent, messages and functions; context-B/decision: the
// mean of the human message alone) and the process CPU time per query. Every iteration runs
// the same query on the conversation as it was after the queries before
// it, restored outside the timer.
func BenchmarkLongConversation(b *testing.B) {
	for _, n := range []int{1, 50, 100, 1000} {
		b.Run(fmt.Sprintf("query=%d", n), func(b *testing.B) {
			m := NewManager(nil)
			m.SetTools([]Placement{{Tool: newTodoGateway()}})
			c, err := m.Conversation(b.Context(), "u", "c")
			if err != nil {
				b.Fatal(err)
			}
			model := &cycleModel{}
			for i := 1; i < n; i++ {
				if err := c.Run(b.Context(), model, model.query(i), "", nil); err != nil {
					b.Fatal(err)
				}
			}
			env, hist, queries := c.env.Snapshot(), c.History(), n-1
			q := model.query(n)
			var cpu time.Duration
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				c.env.Restore(env)
				// The conversation keeps its prompt forms, as between two
				// queries: the restored entries are the same ones (see
				// prompt.FormCache).
				c.promptEnv = c.env.Snapshot()
				c.mu.Lock()
				c.history, c.queries = slices.Clone(hist), queries
				c.mu.Unlock()
				b.StartTimer()
				start := cpuTime(b)
				if err := c.Run(b.Context(), model, q, "q", nil); err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime(b) - start
			}
			sizes, contexts := model.promptSizes()
			if len(sizes) != 3 {
				b.Fatalf("%d decisions in the query, want 3", len(sizes))
			}
			mean := func(s []int) float64 {
				sum := 0
				for _, n := range s {
					sum += n
				}
				return float64(sum) / float64(len(s))
			}
			b.ReportMetric(mean(sizes), "prompt-B/decision")
			b.ReportMetric(float64(slices.Max(sizes)), "max-prompt-B")
			b.ReportMetric(mean(contexts), "context-B/decision")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/query")
		})
	}
}
