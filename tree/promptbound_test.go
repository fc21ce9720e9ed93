package tree

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree/prompt"
)

// bigTool returns one object holding size bytes of text.
type bigTool struct{ size int }

var _ tools.Tool = bigTool{}

func (bigTool) Name() string          { return "mcp_big" }
func (bigTool) Description() string   { return "Dumps a lot of text" }
func (bigTool) Inputs() []tools.Input { return nil }
func (bigTool) EndsRun() bool         { return false }
func (t bigTool) Run(context.Context, tools.Call, tools.Emitter) (tools.Result, error) {
	return tools.Result{Name: "dump", Objects: []map[string]any{{"text": strings.Repeat("x", t.size)}}}, nil
}

// decodePrompt decodes a decision's human message.
func decodePrompt(t *testing.T, text string) map[string]json.RawMessage {
	t.Helper()
	var dc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &dc); err != nil {
		t.Fatalf("prompt does not decode: %v\n%.500s", err, text)
	}
	return dc
}

// TestLongConversationPromptBounded loads a conversation of 10,000 queries
// from the Store, each with its answer and two results, and runs one more:
// every decision prompt stays within the budget and near the size of a new
// conversation's, keeps the last turns whole, names what was folded, and
// the citations of old results still work.
func TestLongConversationPromptBounded(t *testing.T) {
	const queries = 10_000
	store := newMemStore()
	var env tools.Environment
	st := ConversationState{UserID: "alice", ConversationID: "long", Title: "long", InitMode: OneBranch, Ops: []Op{}}
	for i := range queries {
		st.History = append(st.History,
			Message{Role: "user", Content: fmt.Sprintf("create a todo titled \"errand %d\" with priority=2", i)},
			Message{Role: "assistant", Content: fmt.Sprintf("Created the todo 'errand %d' with priority 2.", i)})
		env.Add("mcp_todo", "list", []map[string]any{{"name": "create_todo", "description": "Create a todo"}}, map[string]any{"action": "list"})
		env.Add("mcp_todo", "create_todo", []map[string]any{{"title": fmt.Sprint("errand ", i), "priority": 2}}, nil)
	}
	st.Environment = env.Snapshot()
	if err := store.Save(t.Context(), st, nil); err != nil {
		t.Fatal(err)
	}
	run := func(m *Manager, conv, answer string) []string {
		t.Helper()
		c, err := m.Conversation(t.Context(), "alice", conv)
		if err != nil {
			t.Fatal(err)
		}
		model := script(step{call: "mcp_todo", args: `{"action":"list"}`},
			step{call: "cited_summarize", args: `{"text":"` + answer + `"}`})
		var rec recorder
		if err := c.Run(t.Context(), model, "what did I ask for first?", "q", rec.emit); err != nil {
			t.Fatal(err)
		}
		if a := answerOf(&rec); a != answer {
			t.Errorf("answer = %q, want %q", a, answer)
		}
		return model.prompts
	}
	m := NewManager(&Options{Store: store})
	m.SetTools([]Placement{{Tool: gateway("todo")}})
	// The citation of the oldest result is accepted.
	long := run(m, "long", "You asked for errand 0 [mcp_todo_create_todo_0_0] first.")
	fresh := run(m, "new", "Nothing yet [mcp_todo_list_0_0].")
	for i, p := range long {
		if len(p) > prompt.DefaultMaxBytes {
			t.Errorf("decision %d: prompt of %d bytes, over the budget of %d", i, len(p), prompt.DefaultMaxBytes)
		}
		if limit := len(fresh[i]) + 3<<10; len(p) > limit {
			t.Errorf("decision %d: prompt of %d bytes, a new conversation's is %d", i, len(p), len(fresh[i]))
		}
	}
	dc := decodePrompt(t, long[0])
	var summary string
	var recent []Message
	if err := json.Unmarshal(dc["conversation_summary"], &summary); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(dc["conversation_history"], &recent); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%d earlier messages are folded", 2*queries-len(recent)); !strings.HasPrefix(summary, want) {
		t.Errorf("summary = %q, want it to start with %q", summary, want)
	}
	if !strings.Contains(summary, `"errand 0"`) {
		t.Errorf("summary lacks the first query: %q", summary)
	}
	if n := len(recent); n < 2 || recent[n-1].Content != st.History[2*queries-1].Content {
		t.Errorf("recent history = %v, want the last turns whole", recent)
	}
	for _, s := range []string{"mcp_todo_create_todo_0_*", "mcp_todo_list_0_*"} {
		if !strings.Contains(string(dc["environment"]), s) {
			t.Errorf("environment does not name %s:\n%.2000s", s, dc["environment"])
		}
	}
	// Nothing the user said is lost from the stored history.
	saved, _, _ := store.stored(t, "alice", "long")
	if n := len(saved.History); n != 2*queries+2 {
		t.Errorf("stored history of %d messages, want %d", n, 2*queries+2)
	}
}

// TestHugeResultPromptBounded runs a tool that returns 8 MB, then another
// query: both queries' prompts stay within the budget, and the second
// refers to the dump by its _REF_ID.
func TestHugeResultPromptBounded(t *testing.T) {
	m := NewManager(nil)
	m.SetTools([]Placement{{Tool: gateway("todo")}, {Tool: bigTool{8 << 20}}})
	c, err := m.Conversation(t.Context(), "u", "c")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"dump it", "dump it again"} {
		model := script(step{call: "mcp_big", args: `{}`}, step{call: "text_response", args: `{"text":"done"}`})
		if err := c.Run(t.Context(), model, q, "", nil); err != nil {
			t.Fatal(err)
		}
		for i, p := range model.prompts {
			if len(p) > prompt.DefaultMaxBytes {
				t.Errorf("%s, decision %d: prompt of %d bytes, over the budget of %d", q, i, len(p), prompt.DefaultMaxBytes)
			}
			decodePrompt(t, p)
		}
		if env := string(decodePrompt(t, model.prompts[1])["environment"]); !strings.Contains(env, `"_REF_ID":"mcp_big_dump_0_0"`) {
			t.Errorf("%s: the prompt does not refer to the first dump:\n%.1000s", q, env)
		}
	}
}

// TestRunCapsPromptEnvironment runs a tool that returns 10 MB: the next
// decision's prompt stays under the cap and cites the result's _REF_ID,
// while the result event and the saved environment keep all of it.
func TestRunCapsPromptEnvironment(t *testing.T) {
	const size = 10 << 20
	m := NewManager(nil)
	m.SetTools([]Placement{{Tool: gateway("todo")}, {Tool: bigTool{size}}})
	c, err := m.Conversation(t.Context(), "u", "c")
	if err != nil {
		t.Fatal(err)
	}
	model := script(step{call: "mcp_todo", args: `{"action":"list"}`}, step{call: "mcp_big", args: `{}`},
		step{call: "text_response", args: `{"text":"done"}`})
	var rec recorder
	if err := c.Run(t.Context(), model, "dump it", "q", rec.emit); err != nil {
		t.Fatal(err)
	}
	p := model.prompts[2]
	var dc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(p), &dc); err != nil {
		t.Fatal(err)
	}
	if n := len(dc["environment"]); n > prompt.DefaultMaxEnvironment {
		t.Errorf("environment in the prompt: %d bytes, over the cap of %d", n, prompt.DefaultMaxEnvironment)
	}
	if n := len(p); n > prompt.DefaultMaxEnvironment+8<<10 {
		t.Errorf("prompt of %d bytes", n)
	}
	for _, s := range []string{`"_REF_ID":"mcp_big_dump_0_0"`, `"_TRUNCATED":"1 object, 104`, `"_REF_ID":"mcp_todo_list_0_0"`} {
		if !strings.Contains(string(dc["environment"]), s) {
			t.Errorf("environment in the prompt lacks %s:\n%.1000s", s, dc["environment"])
		}
	}
	var res []map[string]any
	for _, p := range rec.payloads(tools.EventResult) {
		for _, o := range p["objects"].([]any) {
			res = append(res, o.(map[string]any))
		}
	}
	if len(res) != 2 || len(res[1]["text"].(string)) != size {
		t.Errorf("the result event lost the dump")
	}
	dump := c.State().Environment["mcp_big"]["dump"]
	if len(dump) != 1 || len(dump[0].Objects[0]["text"].(string)) != size {
		t.Error("the environment lost the dump")
	}
}
