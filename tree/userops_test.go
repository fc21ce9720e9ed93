package tree

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
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
		ops, err := m.userOpsOf(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if got := branches(ops); !slices.Equal(got, want) {
			t.Errorf("user ops read back = %v, want %v", got, want)
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

// userMaps returns how many users the Manager keeps ops and tokens for.
func userMaps(m *Manager) (ops, locks int) {
	m.users.mu.Lock()
	defer m.users.mu.Unlock()
	return len(m.users.ops), len(m.users.locks)
}

// TestUserMapsStayBounded changes the trees of many users: with a
// UserStore the Manager keeps none of their ops in memory, and a user's
// token lives only while an ApplyUser holds it or waits for it, including
// one whose ctx ends while it waits.
func TestUserMapsStayBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		st := &userMemStore{memStore: newMemStore(), ops: map[string][]Op{}}
		m := NewManager(&Options{Store: st})
		for i := range 1000 {
			if _, err := m.ApplyUser(ctx, fmt.Sprint("user", i), Op{Kind: OpAddBranch, BranchID: "notes", Root: true}); err != nil {
				t.Fatal(err)
			}
		}
		if ops, locks := userMaps(m); ops != 0 || locks != 0 {
			t.Fatalf("after 1000 users: ops of %d users and %d tokens in memory, want none", ops, locks)
		}

		// alice's first change is held in the UserStore; a second waits
		// for her token, and a third gives up waiting.
		release := make(chan struct{})
		var held atomic.Bool
		st.beforeSaveOps = func() {
			if held.CompareAndSwap(false, true) {
				<-release
			}
		}
		errs := make(chan error, 2)
		for _, branch := range []string{"first", "second"} {
			go func() {
				_, err := m.ApplyUser(ctx, "alice", Op{Kind: OpAddBranch, BranchID: branch, Root: true})
				errs <- err
			}()
			synctest.Wait()
		}
		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if _, err := m.ApplyUser(short, "alice", Op{Kind: OpAddBranch, BranchID: "third", Root: true}); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a change whose ctx ended while waiting: err = %v, want DeadlineExceeded", err)
		}
		if _, locks := userMaps(m); locks != 1 {
			t.Errorf("while alice's changes run: %d tokens, want 1", locks)
		}
		close(release)
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		if ops, locks := userMaps(m); ops != 0 || locks != 0 {
			t.Errorf("after alice's changes: ops of %d users and %d tokens in memory, want none", ops, locks)
		}
	})
}

// TestUserOpsWithoutUserStore: a Manager whose Store keeps no user ops
// keeps them in memory, the only copy, and still drops the tokens.
func TestUserOpsWithoutUserStore(t *testing.T) {
	ctx := t.Context()
	m := NewManager(nil)
	if _, err := m.ApplyUser(ctx, "alice", Op{Kind: OpAddBranch, BranchID: "notes", Root: true}); err != nil {
		t.Fatal(err)
	}
	c, err := m.Conversation(ctx, "alice", "c1")
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(c.Tree(), "base"); !strings.Contains(got, "notes") {
		t.Errorf("a new conversation = %s, want alice's branch notes", got)
	}
	if ops, locks := userMaps(m); ops != 1 || locks != 0 {
		t.Errorf("ops of %d users and %d tokens in memory, want 1 and 0", ops, locks)
	}
}
