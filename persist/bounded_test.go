package persist_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/elysia-go/elysia/persist"
	"github.com/elysia-go/elysia/store"
	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
)

// storedBytes is the size of what a conversation's turns and events hold,
// read with the SQLite driver the store registers.
func storedBytes(t *testing.T, path, convID string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }() // read-only
	var turns, events int
	if err := db.QueryRowContext(t.Context(), `SELECT COALESCE(SUM(LENGTH(messages) + COALESCE(LENGTH(results), 0) + COALESCE(LENGTH(digests), 0)), 0)
		FROM turns WHERE conversation_id = ?`, convID).Scan(&turns); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(t.Context(), `SELECT COALESCE(SUM(LENGTH(envelope) + COALESCE(LENGTH(digest), 0)
			+ COALESCE(LENGTH(envelopes), 0) + COALESCE(LENGTH(digests), 0)), 0)
		FROM events WHERE conversation_id = ?`, convID).Scan(&events); err != nil {
		t.Fatal(err)
	}
	return turns + events
}

// openFile opens a fresh SQLite file without waiting for the disk on each
// commit (what is stored is the same; these tests save thousands of
// queries), and returns its path too.
func openFile(t *testing.T) (*persist.Store, *store.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "elysia.db")
	s, err := store.Open(t.Context(), "file:"+path+"?_pragma=synchronous(off)", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return persist.New(s), s, path
}

// TestTenThousandQueries saves 10,000 queries of one conversation as the
// Manager does, each with a result of some 2 KB and its events, then loads
// the conversation: every user message and answer is there, every result
// event replays as it was streamed, and what the conversation stores grows
// by a bounded number of bytes per query: the events the user saw (each
// result kept whole up to the replay cap) and the turn's digest, not the
// turn's whole result as well.
func TestTenThousandQueries(t *testing.T) {
	t.Parallel()
	const queries = 10_000
	p, _, path := openFile(t)
	ctx := t.Context()
	filler := strings.Repeat("x", 2000)
	var half int
	for i := range queries {
		qid := fmt.Sprintf("q%d", i)
		obj := map[string]any{"_REF_ID": fmt.Sprintf("mcp_todo_create_todo_%d_0", i), "title": fmt.Sprintf("todo %d", i), "notes": filler}
		ch := tree.ConversationChange{UserID: "alice", ConversationID: "long", Title: "Todos", InitMode: tree.OneBranch, Ops: []tree.Op{},
			Messages: []tree.Message{{Role: "user", Content: fmt.Sprintf("add todo %d", i)}, {Role: "assistant", Content: fmt.Sprintf("Added todo %d.", i)}},
			Results:  map[string]map[string][]tools.EnvEntry{"mcp_todo": {"create_todo": {{Objects: []map[string]any{obj}, Metadata: map[string]any{"server": "todo"}}}}},
		}
		payload, _ := tools.Marshal(tools.ResultPayload{Type: "table", Objects: []map[string]any{obj}, Metadata: map[string]any{"server": "todo"}})
		text, _ := tools.Marshal(tools.TextPayload{Type: "response", Metadata: map[string]any{}, Objects: []map[string]any{{"text": fmt.Sprintf("Added todo %d.", i)}}})
		events := []tools.Envelope{
			{Type: tools.EventResult, ID: "res-" + qid, UserID: "alice", ConversationID: "long", QueryID: qid, Payload: payload},
			{Type: tools.EventText, ID: "tex-" + qid, UserID: "alice", ConversationID: "long", QueryID: qid, Payload: text},
			{Type: tools.EventCompleted, ID: "com-" + qid, UserID: "alice", ConversationID: "long", QueryID: qid, Payload: json.RawMessage(`{}`)},
		}
		v, err := p.Append(ctx, ch, events)
		if err != nil {
			t.Fatalf("query %d: %v", i, err)
		}
		if v != int64(i+1) {
			t.Fatalf("query %d: version %d, want %d", i, v, i+1)
		}
		if i == queries/2-1 {
			half = storedBytes(t, path, "long")
		}
	}
	total := storedBytes(t, path, "long")
	// The newest query's result is kept whole in its turn; every query keeps
	// its messages, the digest of its result, and its events, the result
	// event (some 2.1 KB) whole for the UI.
	const perQuery = 1200 + 2200
	if got := (total - half) / (queries / 2); got > perQuery {
		t.Errorf("the last %d queries stored %d bytes each, want at most %d", queries/2, got, perQuery)
	}
	if total > queries*perQuery+10_000 {
		t.Errorf("10,000 queries stored %d bytes, want at most %d", total, queries*perQuery+10_000)
	}

	st, ok, err := p.Load(ctx, "alice", "long")
	if err != nil || !ok {
		t.Fatalf("Load = %v, %v", ok, err)
	}
	if len(st.History) != 2*queries {
		t.Fatalf("history holds %d messages, want %d", len(st.History), 2*queries)
	}
	for i := range queries {
		u, a := st.History[2*i], st.History[2*i+1]
		if u.Content != fmt.Sprintf("add todo %d", i) || a.Content != fmt.Sprintf("Added todo %d.", i) {
			t.Fatalf("history %d = %q, %q; want query %d and its answer", 2*i, u.Content, a.Content, i)
		}
	}
	list := st.Environment["mcp_todo"]["create_todo"]
	if len(list) != queries {
		t.Fatalf("environment holds %d results, want %d", len(list), queries)
	}
	for i, e := range list {
		if id, _ := e.Objects[0]["_REF_ID"].(string); id != fmt.Sprintf("mcp_todo_create_todo_%d_0", i) {
			t.Fatalf("result %d cites %q", i, id)
		}
	}
	if n := len(list[queries-1].Objects[0]["notes"].(string)); n != len(filler) {
		t.Errorf("the newest result has %d bytes of notes, want it whole", n)
	}
	if _, whole := list[0].Objects[0]["notes"]; whole {
		t.Error("the first result is still whole, want its digest")
	}
	evs, err := p.Events(ctx, "alice", "long")
	if err != nil || len(evs) != 3*queries {
		t.Fatalf("Events = %d, %v; want %d", len(evs), err, 3*queries)
	}
	for i := range queries {
		if !strings.Contains(string(evs[3*i+1]), fmt.Sprintf("Added todo %d.", i)) {
			t.Fatalf("event %d = %s, want answer %d", 3*i+1, evs[3*i+1], i)
		}
		if !strings.Contains(string(evs[3*i]), filler) {
			t.Fatalf("result event %d = %.200s..., want it whole", 3*i, evs[3*i])
		}
	}
}

// bigTool returns one result of size bytes when asked for "big", and a
// small one otherwise.
type bigTool struct{ size int }

var _ tools.Tool = bigTool{}

func (bigTool) Name() string        { return "big_data" }
func (bigTool) Description() string { return "Returns data." }
func (bigTool) EndsRun() bool       { return false }
func (bigTool) Inputs() []tools.Input {
	return []tools.Input{{Name: "size", Type: "string", Description: "big or small", Default: "small"}}
}

func (b bigTool) Run(_ context.Context, call tools.Call, _ tools.Emitter) (tools.Result, error) {
	n := 10
	if call.Args["size"] == "big" {
		n = b.size
	}
	return tools.Result{Objects: []map[string]any{{"blob": strings.Repeat("b", n)}}, Metadata: map[string]any{"server": "big"}}, nil
}

// scripted answers each query with two decisions: call big_data (with the
// size named in the query), then text_response. Queries run one at a time.
type scripted struct {
	mu    sync.Mutex
	calls int
}

func (m *scripted) GenerateContent(_ context.Context, msgs []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	m.mu.Lock()
	m.calls++
	n := m.calls
	m.mu.Unlock()
	human := ""
	for _, msg := range msgs {
		if msg.Role == llms.ChatMessageTypeHuman {
			human = fmt.Sprint(msg.Parts[0])
		}
	}
	call := llms.FunctionCall{Name: "text_response", Arguments: fmt.Sprintf(`{"text": "answer %d"}`, n/2)}
	if n%2 == 1 {
		size := "small"
		if strings.Contains(human, `"user_prompt":"big`) || strings.Contains(human, `"user_prompt": "big`) {
			size = "big"
		}
		call = llms.FunctionCall{Name: "big_data", Arguments: fmt.Sprintf(`{"size": %q}`, size)}
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: []llms.ToolCall{{ID: "c", Type: "function", FunctionCall: &call}}}}}, nil
}

func (m *scripted) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

// TestLargeResultTrimmed runs queries through a Manager over the store, as
// the service does (with the store's lock): a tool result of 4 MB is stored
// whole while it is the newest, and trimmed to its digest by the next
// query; after a restart the conversation comes back with its history,
// answers and the result's _REF_ID.
func TestLargeResultTrimmed(t *testing.T) {
	t.Parallel()
	const big = 4 << 20
	p, s, path := openFile(t)
	ctx := t.Context()
	model := &scripted{}
	m := tree.NewManager(&tree.Options{Store: p, Locker: s})
	m.SetTools([]tree.Placement{{Tool: bigTool{size: big}}})
	run := func(m *tree.Manager, q string) {
		t.Helper()
		if err := m.Query(ctx, model, "alice", "c1", "q-"+q, q, func(tools.Envelope) {}); err != nil {
			t.Fatalf("query %q: %v", q, err)
		}
	}
	run(m, "small first")
	run(m, "big one please")
	if n := storedBytes(t, path, "c1"); n < big {
		t.Fatalf("after the big result: %d bytes stored, want it whole while newest", n)
	}
	run(m, "small again")
	after := storedBytes(t, path, "c1")
	if after > 64<<10 {
		t.Errorf("after the next query: %d bytes stored, want the big result trimmed", after)
	}
	for i := range 20 {
		run(m, fmt.Sprintf("small %d", i))
	}
	if per := (storedBytes(t, path, "c1") - after) / 20; per > 4<<10 {
		t.Errorf("%d bytes stored per small query", per)
	}

	m2 := tree.NewManager(&tree.Options{Store: p, Locker: s})
	m2.SetTools([]tree.Placement{{Tool: bigTool{size: big}}})
	c, ok, err := m2.Reopen(ctx, "alice", "c1")
	if err != nil || !ok {
		t.Fatalf("Reopen = %v, %v", ok, err)
	}
	h := c.History()
	if len(h) != 2*23 || h[2].Content != "big one please" || h[3].Content != "answer 2" || h[len(h)-1].Content != "answer 23" {
		t.Fatalf("history after a restart: %d messages (%v...)", len(h), h[:min(len(h), 4)])
	}
	st := c.State()
	list := st.Environment["big_data"]["big_data"]
	if len(list) != 23 {
		t.Fatalf("%d results after a restart, want 23", len(list))
	}
	if id, _ := list[1].Objects[0]["_REF_ID"].(string); id != "big_data_big_data_1_0" {
		t.Errorf("the trimmed result cites %q", id)
	}
	if _, whole := list[1].Objects[0]["blob"]; whole {
		t.Error("the 4 MB result came back whole")
	}
	evs, err := p.Events(ctx, "alice", "c1")
	if err != nil {
		t.Fatal(err)
	}
	answers := 0
	for _, e := range evs {
		if len(e) > 64<<10 {
			t.Errorf("an event of %d bytes is kept", len(e))
		}
		if strings.Contains(string(e), `"text":"answer `) {
			answers++
		}
	}
	if answers != 23 {
		t.Errorf("%d answers in the event log, want 23", answers)
	}
	run(m2, "small after restart")
	if h := c.History(); len(h) != 2*24 {
		t.Errorf("after a query on the reopened conversation: %d messages, want %d", len(h), 2*24)
	}
}

// TestReplicasTakeTurns runs one conversation's queries on two Managers
// over one store, as two replicas do: each query runs on what the other
// saved last, and the copy a replica keeps is reused only while no other
// save came between.
func TestReplicasTakeTurns(t *testing.T) {
	t.Parallel()
	p, s, _ := openFile(t)
	ctx := t.Context()
	model := &scripted{}
	replicas := []*tree.Manager{tree.NewManager(&tree.Options{Store: p, Locker: s}), tree.NewManager(&tree.Options{Store: p, Locker: s})}
	var want []string
	for i, r := range []int{0, 1, 1, 0, 1, 0, 0} {
		m := replicas[r]
		m.SetTools([]tree.Placement{{Tool: bigTool{size: 10}}})
		q := fmt.Sprintf("small %d on replica %d", i, r)
		if err := m.Query(ctx, model, "alice", "c1", fmt.Sprintf("q%d", i), q, func(tools.Envelope) {}); err != nil {
			t.Fatal(err)
		}
		want = append(want, q)
		c, err := m.Conversation(ctx, "alice", "c1")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, msg := range c.History() {
			if msg.Role == "user" {
				got = append(got, msg.Content)
			}
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("after query %d, replica %d has queries %q, want %q", i, r, got, want)
		}
		if list := c.State().Environment["big_data"]["big_data"]; len(list) != i+1 {
			t.Fatalf("after query %d, replica %d has %d results, want %d", i, r, len(list), i+1)
		}
	}
}
