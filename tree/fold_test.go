package tree

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/tools"
)

// decodePrompt decodes a decision's human message.
func decodePrompt(t *testing.T, prompt string) map[string]json.RawMessage {
	t.Helper()
	var dc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(prompt), &dc); err != nil {
		t.Fatalf("prompt does not decode: %v\n%.500s", err, prompt)
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
		if len(p) > defaultMaxPromptBytes {
			t.Errorf("decision %d: prompt of %d bytes, over the budget of %d", i, len(p), defaultMaxPromptBytes)
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
			if len(p) > defaultMaxPromptBytes {
				t.Errorf("%s, decision %d: prompt of %d bytes, over the budget of %d", q, i, len(p), defaultMaxPromptBytes)
			}
			decodePrompt(t, p)
		}
		if env := string(decodePrompt(t, model.prompts[1])["environment"]); !strings.Contains(env, `"_REF_ID":"mcp_big_dump_0_0"`) {
			t.Errorf("%s: the prompt does not refer to the first dump:\n%.1000s", q, env)
		}
	}
}

func TestFoldHistory(t *testing.T) {
	turns := func(n, size int) []Message {
		var h []Message
		for i := range n {
			h = append(h, Message{"user", fmt.Sprintf("q%d %s", i, strings.Repeat("q", size))},
				Message{"assistant", fmt.Sprintf("a%d %s", i, strings.Repeat("a", size))})
		}
		return h
	}
	for _, tc := range []struct {
		name        string
		h           []Message
		budget      int
		recent      int  // messages kept whole
		summary     bool // a summary is made
		maxSummary  int
		cutNewest   bool
		wantFolded  int
		wantRecent0 string
	}{
		{name: "empty", h: nil, budget: 24 << 10},
		{name: "short conversation whole", h: turns(2, 10), budget: 24 << 10, recent: 4},
		{name: "old turns folded", h: turns(50, 10), budget: 24 << 10, recent: 2 * recentTurns, summary: true, wantFolded: 100 - 2*recentTurns},
		{name: "big turns: only the newest", h: turns(5, 1000), budget: 24 << 10, recent: 2, summary: true, wantFolded: 8},
		{name: "huge newest turn cut", h: turns(1, 1<<20), budget: 24 << 10, recent: 2, cutNewest: true},
		{name: "no budget", h: turns(50, 10), budget: -1, recent: unboundedHistory},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := foldHistory(tc.h, tc.budget)
			if len(f.recent) != tc.recent {
				t.Errorf("%d recent messages, want %d", len(f.recent), tc.recent)
			}
			if (f.summary != "") != tc.summary {
				t.Errorf("summary = %q, want one: %v", f.summary, tc.summary)
			}
			if f.folded != tc.wantFolded {
				t.Errorf("folded %d, want %d", f.folded, tc.wantFolded)
			}
			if tc.budget > 0 && len(f.summary) > tc.budget/summaryDiv+len("…") {
				t.Errorf("summary of %d bytes, over %d", len(f.summary), tc.budget/summaryDiv)
			}
			size := 0
			for _, m := range f.recent {
				size += len(m.Content)
			}
			if tc.budget > 0 && size > 2*(tc.budget/historyDiv+64) {
				t.Errorf("recent messages of %d bytes", size)
			}
			if tc.cutNewest && !strings.Contains(f.recent[0].Content, "bytes cut)") {
				t.Errorf("the huge message is not marked as cut: %.100s", f.recent[0].Content)
			}
		})
	}
}

func TestFoldTasksAndErrors(t *testing.T) {
	var ts []Task
	for i := range 20 {
		ts = append(ts, Task{Tool: "mcp_todo", Inputs: map[string]any{"action": "execute", "tool_inputs": map[string]any{"text": strings.Repeat("x", 4096)}},
			Result: strings.Repeat("r", 4096), Error: i%2 == 0})
	}
	got, folded := foldTasks(ts)
	if len(got) != maxTasks || folded != 20-maxTasks+1 || got[0].Tool != "earlier_tasks" {
		t.Errorf("foldTasks: %d tasks, %d folded, first %q", len(got), folded, got[0].Tool)
	}
	enc, _ := tools.Marshal(got)
	if len(enc) > maxTasks*(maxTaskText+maxTaskInput+256) {
		t.Errorf("tasks of %d bytes", len(enc))
	}
	if got[1].Inputs["action"] != "execute" {
		t.Errorf("a folded task lost its action: %v", got[1].Inputs)
	}
	if len(ts[19].Inputs["tool_inputs"].(map[string]any)["text"].(string)) != 4096 {
		t.Error("foldTasks changed the run's tasks")
	}
	var es []PreviousError
	for range 9 {
		es = append(es, PreviousError{Tool: "t", ErrorMessage: strings.Repeat("e", 10_000)})
	}
	if got := foldErrors(es); len(got) != maxErrors || len(got[0].ErrorMessage) > maxTaskText+len("…") {
		t.Errorf("foldErrors: %d errors of %d bytes", len(got), len(got[0].ErrorMessage))
	}
}
