package tree_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/elysia-go/elysia/persist"
	"github.com/elysia-go/elysia/store"
	"github.com/elysia-go/elysia/tree"
)

// replica opens the SQLite database at path as one replica (a process of
// its own) does, and returns a Manager over it.
func replica(t *testing.T, path string) *tree.Manager {
	t.Helper()
	s, err := store.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return tree.NewManager(&tree.Options{Store: persist.New(s), Locker: s})
}

// rootIDs returns the ids of the options of a conversation's root.
func rootIDs(t *testing.T, m *tree.Manager, user, conv string) []string {
	t.Helper()
	c, err := m.Conversation(t.Context(), user, conv)
	if err != nil {
		t.Fatal(err)
	}
	return c.Tree().Root().OptionIDs()
}

// TestUserOpsReachOtherReplicas runs two Managers over one database, as two
// replicas: a user's own tree change made on one reaches the user's new
// conversations on the other, even after the other has read the user's
// changes before, and a change made on the other builds on it.
func TestUserOpsReachOtherReplicas(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "elysia.db")
	a, b := replica(t, path), replica(t, path)

	// B reads alice's changes (none yet) for a conversation of hers.
	if got := rootIDs(t, b, "alice", "b0"); slices.Contains(got, "notes") {
		t.Fatalf("before any change, alice's tree on B = %v", got)
	}
	if _, err := a.ApplyUser(ctx, "alice", tree.Op{Kind: tree.OpAddBranch, BranchID: "notes", Root: true}); err != nil {
		t.Fatal(err)
	}
	if got := rootIDs(t, b, "alice", "b1"); !slices.Contains(got, "notes") {
		t.Errorf("a new conversation on B = %v, want alice's branch notes made on A", got)
	}

	// A change on B keeps the one made on A, for new conversations on
	// either replica.
	if _, err := b.ApplyUser(ctx, "alice", tree.Op{Kind: tree.OpAddBranch, BranchID: "plans", Root: true}); err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string]*tree.Manager{"A": a, "B": b} {
		got := rootIDs(t, m, "alice", "new-on-"+name)
		if !slices.Contains(got, "notes") || !slices.Contains(got, "plans") {
			t.Errorf("a new conversation on %s = %v, want both of alice's branches", name, got)
		}
	}
	// A fresh replica reads both from the database.
	if got := rootIDs(t, replica(t, path), "alice", "fresh"); !slices.Contains(got, "notes") || !slices.Contains(got, "plans") {
		t.Errorf("a new conversation on a fresh replica = %v, want both of alice's branches", got)
	}
}

// BenchmarkNewConversationUserOps creates conversations of a user with
// five tree changes of her own, over SQLite: the cost of reading her
// changes from the Store for each new conversation.
func BenchmarkNewConversationUserOps(b *testing.B) {
	ctx := b.Context()
	s, err := store.Open(ctx, filepath.Join(b.TempDir(), "elysia.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	m := tree.NewManager(&tree.Options{Store: persist.New(s)})
	for i := range 5 {
		if _, err := m.ApplyUser(ctx, "alice", tree.Op{Kind: tree.OpAddBranch, BranchID: fmt.Sprint("b", i), Root: true}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, err := m.Conversation(ctx, "alice", fmt.Sprint("c", i)); err != nil {
			b.Fatal(err)
		}
	}
}
