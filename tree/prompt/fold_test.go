package prompt

import (
	"fmt"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/tools"
)

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
			f := FoldHistory(tc.h, tc.budget)
			if len(f.Recent) != tc.recent {
				t.Errorf("%d recent messages, want %d", len(f.Recent), tc.recent)
			}
			if (f.Summary != "") != tc.summary {
				t.Errorf("summary = %q, want one: %v", f.Summary, tc.summary)
			}
			if f.Folded != tc.wantFolded {
				t.Errorf("folded %d, want %d", f.Folded, tc.wantFolded)
			}
			if tc.budget > 0 && len(f.Summary) > tc.budget/summaryDiv+len("…") {
				t.Errorf("summary of %d bytes, over %d", len(f.Summary), tc.budget/summaryDiv)
			}
			size := 0
			for _, m := range f.Recent {
				size += len(m.Content)
			}
			if tc.budget > 0 && size > 2*(tc.budget/historyDiv+64) {
				t.Errorf("recent messages of %d bytes", size)
			}
			if tc.cutNewest && !strings.Contains(f.Recent[0].Content, "bytes cut)") {
				t.Errorf("the huge message is not marked as cut: %.100s", f.Recent[0].Content)
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
	got, folded := FoldTasks(ts)
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
	if got := FoldErrors(es); len(got) != maxErrors || len(got[0].ErrorMessage) > maxTaskText+len("…") {
		t.Errorf("foldErrors: %d errors of %d bytes", len(got), len(got[0].ErrorMessage))
	}
}
