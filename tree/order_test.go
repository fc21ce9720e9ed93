package tree

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/elysia-go/elysia/tools"
)

// TestDecisionBeforeItsEvents runs a list-then-execute query through a
// branch: each decision's tree_update goes out before the events it causes
// (the branch's status line, the tool's status and result), so a client
// prints "base → mcp_todo" before the result it led to; and the event log
// saved for the UI holds the events in the order they were streamed.
func TestDecisionBeforeItsEvents(t *testing.T) {
	ctx := t.Context()
	store := newMemStore()
	m, _ := newTestManager(t, &Options{Store: store})
	for _, op := range []Op{
		{Kind: OpAddBranch, BranchID: "work", Description: "Work tools", Status: "Looking at work tools...", Root: true},
		{Kind: OpRemoveTool, ToolName: "mcp_todo"},
		{Kind: OpAddTool, ToolName: "mcp_todo", BranchID: "work"},
	} {
		if _, err := m.Apply(ctx, "alice", "c1", op); err != nil {
			t.Fatal(err)
		}
	}
	c, err := m.Conversation(ctx, "alice", "c1")
	if err != nil {
		t.Fatal(err)
	}
	model := script(
		step{call: "work"},
		step{call: "mcp_todo", args: `{"action":"list"}`, content: "Listing the todo tools."},
		step{call: "work"},
		step{call: "mcp_todo", args: `{"action":"execute","tool_name":"create_todo","tool_inputs":{"title":"Buy milk"}}`},
		step{call: "text_response", args: `{"text":"Added 'Buy milk'."}`},
	)
	var rec recorder
	if err := c.Run(ctx, model, "create a todo titled \"Buy milk\"", "q1", rec.emit); err != nil {
		t.Fatal(err)
	}
	want := "title" +
		" tree_update status" + // base → work, then the branch's line
		" tree_update status result" + // work → mcp_todo (list), then its status and result
		" tree_update status" +
		" tree_update status result" + // work → mcp_todo (execute)
		" tree_update status text" + // base → text_response, then its answer
		" completed"
	if got := rec.types(); got != want {
		t.Errorf("events:\n got %s\nwant %s", got, want)
	}
	var decisions []string
	for _, tu := range rec.payloads(tools.EventTreeUpdate) {
		decisions = append(decisions, tu["node"].(string)+"→"+tu["decision"].(string))
	}
	if diff := cmp.Diff([]string{"base→work", "work→mcp_todo", "base→work", "work→mcp_todo", "base→text_response"}, decisions); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}

	store.mu.Lock()
	saved := append([]tools.Envelope(nil), store.events["alice/c1"]...)
	store.mu.Unlock()
	rec.mu.Lock()
	streamed := append([]tools.Envelope(nil), rec.evs...)
	rec.mu.Unlock()
	if diff := cmp.Diff(streamed, saved); diff != "" {
		t.Errorf("saved event log differs from the stream (-streamed +saved):\n%s", diff)
	}
}
