package persist_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/elysia-go/elysia/persist"
	"github.com/elysia-go/elysia/store"
	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
)

// openStore opens a fresh SQLite file and wraps it.
func openStore(t *testing.T) (*persist.Store, *store.Store) {
	t.Helper()
	s, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "elysia.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return persist.New(s), s
}

func TestSaveLoadRoundTrip(t *testing.T) {
	p, _ := openStore(t)
	ctx := t.Context()
	want := tree.ConversationState{
		UserID: "alice", ConversationID: "c1", Title: "Todos", InitMode: tree.MultiBranch,
		Ops:     []tree.Op{{Kind: tree.OpAddBranch, BranchID: "b1", Description: "d", Instruction: "i", Status: "Thinking..."}},
		History: []tree.Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "hello"}},
		Environment: map[string]map[string][]tools.EnvEntry{
			"mcp_todo": {"list": {{Objects: []map[string]any{{"name": "create_todo", "_REF_ID": "mcp_todo_list_0_0"}}, Metadata: map[string]any{"server": "todo"}}}},
		},
	}
	ev := tools.Envelope{Type: tools.EventCompleted, ID: "com-1", UserID: "alice", ConversationID: "c1", QueryID: "q1", Payload: json.RawMessage(`{}`)}
	if err := p.Save(ctx, want, []tools.Envelope{ev}); err != nil {
		t.Fatal(err)
	}
	got, ok, err := p.Load(ctx, "alice", "c1")
	if err != nil || !ok {
		t.Fatalf("Load = ok %v, err %v", ok, err)
	}
	got.UpdatedAt = want.UpdatedAt
	want.Version = 1 // the first save
	// An entry's cached JSON is not part of its value.
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(tools.EnvEntry{})); diff != "" {
		t.Errorf("Load after Save (-want +got):\n%s", diff)
	}

	evs, err := p.Events(ctx, "alice", "c1")
	if err != nil {
		t.Fatal(err)
	}
	wantEv, _ := tools.Marshal(ev)
	if len(evs) != 1 || string(evs[0]) != string(wantEv) {
		t.Errorf("Events = %s, want [%s]", evs, wantEv)
	}
}

func TestMissing(t *testing.T) {
	p, _ := openStore(t)
	ctx := t.Context()
	if _, ok, err := p.Load(ctx, "alice", "nope"); ok || err != nil {
		t.Errorf("Load of a missing conversation = ok %v, err %v; want false, nil", ok, err)
	}
	evs, err := p.Events(ctx, "alice", "nope")
	if err != nil || evs == nil || len(evs) != 0 {
		t.Errorf("Events of a missing conversation = %v, %v; want an empty log", evs, err)
	}
	err = p.Delete(ctx, "alice", "nope")
	if !errors.Is(err, tree.ErrNotFound) || !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Delete of a missing conversation = %v; want tree.ErrNotFound and store.ErrNotFound", err)
	}
	ops, err := p.LoadUserOps(ctx, "nobody")
	if ops != nil || err != nil {
		t.Errorf("LoadUserOps of an unknown user = %v, %v; want nil, nil", ops, err)
	}
}

func TestUsers(t *testing.T) {
	p, _ := openStore(t)
	ctx := t.Context()
	for _, want := range []bool{false, true} {
		existed, err := p.EnsureUser(ctx, "bob")
		if err != nil || existed != want {
			t.Errorf("EnsureUser = %v, %v; want %v", existed, err, want)
		}
	}
	ops := []tree.Op{{Kind: tree.OpRemoveTool, ToolName: "cited_summarize"}}
	if err := p.SaveUserOps(ctx, "bob", ops); err != nil {
		t.Fatal(err)
	}
	got, err := p.LoadUserOps(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ops, got); diff != "" {
		t.Errorf("LoadUserOps (-want +got):\n%s", diff)
	}
}

// TestManagerRestart runs a tree.Manager over the store, then a second one
// on the same store, as after a restart: the conversation, its tree change
// and the list come back, and a Delete reaches the store.
func TestManagerRestart(t *testing.T) {
	p, _ := openStore(t)
	ctx := t.Context()
	m1 := tree.NewManager(&tree.Options{Store: p})
	if _, err := m1.Apply(ctx, "alice", "c1", tree.Op{Kind: tree.OpRemoveTool, ToolName: "cited_summarize"}); err != nil {
		t.Fatal(err)
	}

	m2 := tree.NewManager(&tree.Options{Store: p})
	list, err := m2.Conversations(ctx, "alice")
	if err != nil || len(list) != 1 || list[0].ConversationID != "c1" {
		t.Fatalf("Conversations after a restart = %v, %v", list, err)
	}
	c, ok, err := m2.Existing(ctx, "alice", "c1")
	if err != nil || !ok {
		t.Fatalf("Existing after a restart = %v, %v", ok, err)
	}
	if slices.Contains(c.Tree().Root().OptionIDs(), "cited_summarize") {
		t.Errorf("the removed tool came back after a restart: %v", c.Tree().Root().OptionIDs())
	}
	if err := m2.Delete(ctx, "alice", "c1"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := p.Load(ctx, "alice", "c1"); ok || err != nil {
		t.Errorf("Load after Delete = %v, %v; want gone", ok, err)
	}
}

func TestFeedback(t *testing.T) {
	p, _ := openStore(t)
	ctx := t.Context()
	if err := p.AddFeedback(ctx, "alice", "c1", "q1", 2); err != nil {
		t.Fatal(err)
	}
	var got []int
	if err := p.EachFeedback(ctx, "alice", func(r int, at time.Time) {
		if at.IsZero() {
			t.Error("a rating without a time")
		}
		got = append(got, r)
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int{2}) {
		t.Errorf("ratings = %v, want [2]", got)
	}
	if err := p.RemoveFeedback(ctx, "alice", "c1", "q1"); err != nil {
		t.Fatal(err)
	}
	if err := p.RemoveFeedback(ctx, "alice", "c1", "q1"); !errors.Is(err, tree.ErrNotFound) {
		t.Errorf("RemoveFeedback of a missing rating = %v, want tree.ErrNotFound", err)
	}
}
