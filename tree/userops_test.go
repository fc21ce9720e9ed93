package tree

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// userMemStore is a memStore that also keeps users' own tree changes.
type userMemStore struct {
	*memStore
	mu  sync.Mutex
	ops map[string][]Op
	// beforeSaveOps, when set, is called at the start of every
	// SaveUserOps, before the ops are stored.
	beforeSaveOps func()
}

func (s *userMemStore) LoadUserOps(_ context.Context, user string) ([]Op, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ops[user]), nil
}

func (s *userMemStore) SaveUserOps(_ context.Context, user string, ops []Op) error {
	if s.beforeSaveOps != nil {
		s.beforeSaveOps()
	}
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

// TestApplyUserConcurrentKeepsEveryOp holds alice's first change in the
// UserStore while she makes a second: both must be kept, in memory and in
// the Store, in order.
func TestApplyUserConcurrentKeepsEveryOp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		st := &userMemStore{memStore: newMemStore(), ops: map[string][]Op{}}
		release := make(chan struct{})
		var held atomic.Bool
		st.beforeSaveOps = func() {
			if held.CompareAndSwap(false, true) {
				<-release
			}
		}
		m := NewManager(&Options{Store: st})
		errs := make(chan error, 2)
		apply := func(branch string) {
			_, err := m.ApplyUser(ctx, "alice", Op{Kind: OpAddBranch, BranchID: branch, Root: true})
			errs <- err
		}
		go apply("first")
		synctest.Wait() // the first change is held in the UserStore
		go apply("second")
		synctest.Wait()
		close(release)
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		branches := func(ops []Op) []string {
			var ids []string
			for _, op := range ops {
				ids = append(ids, op.BranchID)
			}
			return ids
		}
		want := []string{"first", "second"}
		if got := branches(st.ops["alice"]); !slices.Equal(got, want) {
			t.Errorf("saved user ops = %v, want %v", got, want)
		}
		m.users.mu.Lock()
		got := branches(m.users.ops["alice"])
		m.users.mu.Unlock()
		if !slices.Equal(got, want) {
			t.Errorf("user ops in memory = %v, want %v", got, want)
		}
	})
}

// listingStore is a userMemStore that lists conversations, and calls
// onList (once) after listing, to change the store under the caller.
type listingStore struct {
	*userMemStore
	onList func()
}

func (s *listingStore) List(_ context.Context, user string) ([]ConversationInfo, error) {
	s.memStore.mu.Lock()
	var out []ConversationInfo
	for k := range s.states {
		if u, conv, _ := strings.Cut(k, "/"); u == user {
			out = append(out, ConversationInfo{ConversationID: conv})
		}
	}
	s.memStore.mu.Unlock()
	if f := s.onList; f != nil {
		s.onList = nil
		f()
	}
	return out, nil
}

// TestApplyUserSkipsDeleted deletes a conversation after ApplyUser listed
// it: the change must not create it again.
func TestApplyUserSkipsDeleted(t *testing.T) {
	ctx := t.Context()
	st := &listingStore{userMemStore: &userMemStore{memStore: newMemStore(), ops: map[string][]Op{}}}
	m := NewManager(&Options{Store: st})
	if _, err := m.Apply(ctx, "alice", "old", Op{Kind: OpAddBranch, BranchID: "a", Root: true}); err != nil {
		t.Fatal(err)
	}
	st.onList = func() {
		if err := m.Delete(ctx, "alice", "old"); err != nil {
			t.Error(err)
		}
	}
	if _, err := m.ApplyUser(ctx, "alice", Op{Kind: OpAddBranch, BranchID: "b", Root: true}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := st.stored(t, "alice", "old"); ok {
		t.Error("ApplyUser saved a deleted conversation again")
	}
	if _, ok, err := m.Existing(ctx, "alice", "old"); ok || err != nil {
		t.Errorf("ApplyUser created a deleted conversation again (err %v)", err)
	}
}
