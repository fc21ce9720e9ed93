package tree

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
)

// userMemStore is a memStore that also keeps users' own tree changes.
type userMemStore struct {
	*memStore
	mu  sync.Mutex
	ops map[string][]Op
}

func (s *userMemStore) LoadUserOps(_ context.Context, user string) ([]Op, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ops[user]), nil
}

func (s *userMemStore) SaveUserOps(_ context.Context, user string, ops []Op) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops[user] = slices.Clone(ops)
	return nil
}

func TestApplyUserReachesOldAndNewConversations(t *testing.T) {
	ctx := t.Context()
	st := &userMemStore{memStore: newMemStore(), ops: map[string][]Op{}}
	m := NewManager(&Options{Store: st})
	m.SetTools([]Placement{{Tool: gateway("todo")}})
	old, _ := m.Conversation(ctx, "alice", "old")
	bobs, _ := m.Conversation(ctx, "bob", "b1")

	add := Op{Kind: OpAddBranch, BranchID: "notes", Description: "Notes", Root: true}
	preview, err := m.ApplyUser(ctx, "alice", add)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(preview, "base"); got != "text_response,cited_summarize,mcp_todo,notes" {
		t.Fatalf("preview = %s", got)
	}
	if got := ids(old.Tree(), "base"); got != "text_response,cited_summarize,mcp_todo,notes" {
		t.Errorf("existing conversation = %s", got)
	}
	if got := ids(bobs.Tree(), "base"); got != "text_response,cited_summarize,mcp_todo" {
		t.Errorf("another user's conversation changed: %s", got)
	}

	// A new process (same store) gives alice's new conversations the branch.
	m2 := NewManager(&Options{Store: st})
	m2.SetTools([]Placement{{Tool: gateway("todo")}})
	fresh, err := m2.Conversation(ctx, "alice", "fresh")
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(fresh.Tree(), "base"); got != "text_response,cited_summarize,mcp_todo,notes" {
		t.Errorf("new conversation after a restart = %s", got)
	}

	// An op that cannot apply changes nothing.
	if _, err := m.ApplyUser(ctx, "alice", Op{Kind: OpAddTool, ToolName: "mcp_nope"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown tool: err = %v, want ErrNotFound", err)
	}
	if got := len(st.ops["alice"]); got != 1 {
		t.Errorf("saved %d user ops after a failed op, want 1", got)
	}
}
