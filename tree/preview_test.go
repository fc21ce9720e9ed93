package tree

import "testing"

// TestPreview: a conversation nobody has asked anything yet shows the tree
// it would be created with, the user's own changes included, and is
// neither created nor saved; an existing one shows its own tree.
func TestPreview(t *testing.T) {
	ctx := t.Context()
	st := &userMemStore{memStore: newMemStore(), ops: map[string][]Op{}}
	m := NewManager(&Options{Store: st})
	m.SetTools([]Placement{{Tool: gateway("todo")}})
	if _, err := m.ApplyUser(ctx, "alice", Op{Kind: OpAddBranch, BranchID: "notes", Description: "Notes", Root: true}); err != nil {
		t.Fatal(err)
	}
	tr, exists, err := m.Preview(ctx, "alice", "new")
	if err != nil || exists {
		t.Fatalf("Preview of a new conversation: exists %v, err %v", exists, err)
	}
	if got := ids(tr, "base"); got != "text_response,cited_summarize,mcp_todo,notes" {
		t.Errorf("the new conversation's tree = %s, want the user's branch in it", got)
	}
	if _, ok, _ := st.Load(ctx, "alice", "new"); ok {
		t.Error("Preview saved the conversation")
	}
	list, err := m.Conversations(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	for _, ci := range list {
		if ci.ConversationID == "new" {
			t.Error("Preview made the conversation: it is listed")
		}
	}

	// An existing conversation: its own tree.
	if _, err := m.Apply(ctx, "alice", "old", Op{Kind: OpRemoveTool, ToolName: "mcp_todo", BranchID: "base"}); err != nil {
		t.Fatal(err)
	}
	m.Forget("alice", "old") // read back from the Store
	tr, exists, err = m.Preview(ctx, "alice", "old")
	if err != nil || !exists {
		t.Fatalf("Preview of an existing conversation: exists %v, err %v", exists, err)
	}
	if got := ids(tr, "base"); got != "text_response,cited_summarize,notes" {
		t.Errorf("the existing conversation's tree = %s, want its own", got)
	}
}
