package tree

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// conv returns m's conversation u/id, loading or creating it.
func conv(t *testing.T, m *Manager, id string) *Conversation {
	t.Helper()
	c, err := m.Conversation(t.Context(), "u", id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// inMemory returns the ids of the conversations of user u that m holds in
// memory, sorted.
func inMemory(m *Manager) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []string
	for k := range m.convs {
		ids = append(ids, k.conv)
	}
	slices.Sort(ids)
	return ids
}

// TestEvictIdleConversations bounds the conversations in memory to 3:
// the least recently used idle ones are dropped and come back from the
// Store intact, while one running a query or with a change the Store does
// not have stays.
func TestEvictIdleConversations(t *testing.T) {
	ctx := t.Context()
	store := newMemStore()
	m := NewManager(&Options{Store: store, MaxConversations: 3})
	m.SetTools([]Placement{{Tool: gateway("todo")}})
	for i := range 5 {
		id := fmt.Sprint("c", i)
		if _, err := m.Apply(ctx, "u", id, Op{Kind: OpAddBranch, BranchID: "b" + id, Root: true}); err != nil {
			t.Fatal(err)
		}
		answer := fmt.Sprintf(`{"text":"answer %d"}`, i)
		if err := conv(t, m, id).Run(ctx, script(step{call: "text_response", args: answer}), "query "+id, "", nil); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := inMemory(m), []string{"c2", "c3", "c4"}; !slices.Equal(got, want) {
		t.Fatalf("in memory: %v, want %v", got, want)
	}
	for _, i := range []int{0, 1} {
		id := fmt.Sprint("c", i)
		c := conv(t, m, id)
		if got, want := ids(c.Tree(), "base"), "text_response,cited_summarize,mcp_todo,b"+id; got != want {
			t.Errorf("%s came back with the tree %s, want %s", id, got, want)
		}
		var got []string
		for _, msg := range c.History() {
			got = append(got, msg.Content)
		}
		if want := []string{"query " + id, fmt.Sprint("answer ", i)}; !slices.Equal(got, want) {
			t.Errorf("%s came back with the history %q, want %q", id, got, want)
		}
	}
	if got, want := inMemory(m), []string{"c0", "c1", "c4"}; !slices.Equal(got, want) {
		t.Fatalf("in memory: %v, want %v", got, want)
	}

	// c4, the least recently used, runs a query; c1 has a change the Store
	// failed to save. Neither leaves memory, however many others come.
	busy := conv(t, m, "c4")
	finish := runBlocked(t, busy)
	store.failSaves.Store(true)
	if _, err := m.Apply(ctx, "u", "c1", Op{Kind: OpAddBranch, BranchID: "unsaved", Root: true}); err == nil {
		t.Fatal("the save did not fail")
	}
	store.failSaves.Store(false)
	for i := range 4 {
		conv(t, m, fmt.Sprint("new", i))
	}
	if got, want := inMemory(m), []string{"c1", "c4", "new3"}; !slices.Equal(got, want) {
		t.Errorf("in memory: %v, want %v", got, want)
	}
	if err := finish(); err != nil {
		t.Fatal(err)
	}
	if conv(t, m, "c4") != busy {
		t.Error("the conversation that ran a query was dropped")
	}
	if got := ids(conv(t, m, "c1").Tree(), "base"); got != "text_response,cited_summarize,mcp_todo,bc1,unsaved" {
		t.Errorf("c1 lost its unsaved change: %s", got)
	}
}

func TestNoEvictionWithoutStore(t *testing.T) {
	m := NewManager(&Options{MaxConversations: 1})
	for i := range 3 {
		conv(t, m, fmt.Sprint("c", i))
	}
	if got := inMemory(m); len(got) != 3 {
		t.Errorf("in memory: %v, want all 3: memory is their only copy", got)
	}
}

// TestLoadOverlappingEvictionLoadsAgain holds a load of a conversation
// while another caller loads it, changes it and it is evicted: the held
// load read the Store before the change was saved, and must load again
// rather than bring back the older state.
func TestLoadOverlappingEvictionLoadsAgain(t *testing.T) {
	ctx := t.Context()
	store := newMemStore()
	if _, err := NewManager(&Options{Store: store}).Apply(ctx, "u", "c",
		Op{Kind: OpAddBranch, BranchID: "first", Root: true}); err != nil {
		t.Fatal(err)
	}
	m := NewManager(&Options{Store: store, MaxConversations: 1})
	entered, release := make(chan struct{}), make(chan struct{})
	var held1 atomic.Bool
	store.afterLoad = func() { // holds the first load only
		if held1.CompareAndSwap(false, true) {
			close(entered)
			<-release
		}
	}
	held := make(chan *Conversation, 1)
	go func() {
		c, err := m.Conversation(ctx, "u", "c")
		if err != nil {
			t.Error(err)
		}
		held <- c
	}()
	<-entered
	if _, err := m.Apply(ctx, "u", "c", Op{Kind: OpAddBranch, BranchID: "second", Root: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Conversation(ctx, "u", "other"); err != nil { // evicts c
		t.Fatal(err)
	}
	if got := inMemory(m); !slices.Equal(got, []string{"other"}) {
		t.Fatalf("in memory: %v, want c evicted", got)
	}
	close(release)
	c := <-held
	if got := ids(c.Tree(), "base"); got != "text_response,cited_summarize,first,second" {
		t.Errorf("the held load returned the tree %s, an older state", got)
	}
}

// TestChangeToDroppedCopy changes a conversation through a copy that was
// evicted and loaded again meanwhile: the change must reach the copy in
// memory, or that copy's next save would drop it from the Store.
func TestChangeToDroppedCopy(t *testing.T) {
	ctx := t.Context()
	m := NewManager(&Options{Store: newMemStore(), MaxConversations: 1})
	old := conv(t, m, "a")
	conv(t, m, "b") // evicts a
	cur := conv(t, m, "a")
	if cur == old {
		t.Fatal("a was not evicted")
	}
	if _, err := m.applyTo(ctx, old, Op{Kind: OpAddBranch, BranchID: "notes", Root: true}); err != nil {
		t.Fatal(err)
	}
	if got := ids(cur.Tree(), "base"); got != "text_response,cited_summarize,notes" {
		t.Errorf("the copy in memory has the tree %s, without the change", got)
	}
	if _, err := m.InitConversation(ctx, "u", "a", Empty); err != nil {
		t.Fatal(err)
	}
	conv(t, m, "b") // evicts a
	if got := conv(t, m, "a"); got.Mode() != Empty {
		t.Errorf("reloaded mode = %s, want empty", got.Mode())
	}
}

// TestLoadWhenAllOthersBusy loads a conversation while every other one in
// memory runs a query: it goes over the bound rather than drop the
// conversation it was loaded for, which its caller could then never run.
func TestLoadWhenAllOthersBusy(t *testing.T) {
	ctx := t.Context()
	m := NewManager(&Options{Store: newMemStore(), MaxConversations: 1})
	finish := runBlocked(t, conv(t, m, "busy"))
	c := conv(t, m, "new")
	if got := inMemory(m); !slices.Equal(got, []string{"busy", "new"}) {
		t.Errorf("in memory: %v, want both", got)
	}
	if err := c.Run(ctx, script(step{call: "text_response", args: `{"text":"hi"}`}), "q", "", nil); err != nil {
		t.Fatal(err)
	}
	if err := finish(); err != nil {
		t.Fatal(err)
	}
}

// TestChangeToDroppedThenDeletedCopy: a caller holds a copy (as ApplyUser
// does after listing), the copy is dropped from memory (Forget, eviction)
// and the conversation deleted; the caller's change must fail, not create
// the conversation again.
func TestChangeToDroppedThenDeletedCopy(t *testing.T) {
	ctx := t.Context()
	store := newMemStore()
	m := NewManager(&Options{Store: store})
	c := conv(t, m, "a")
	m.Forget("u", "a")
	if err := m.Delete(ctx, "u", "a"); err != nil {
		t.Fatal(err)
	}
	_, err := m.applyTo(ctx, c, Op{Kind: OpAddBranch, BranchID: "x", Root: true})
	if _, ok, _ := store.stored(t, "u", "a"); !errors.Is(err, errDeleted) || ok {
		t.Errorf("change to a dropped, deleted copy: err = %v, back in the store = %v; want errDeleted and gone", err, ok)
	}
	if err := c.Run(ctx, script(step{call: "text_response", args: `{"text":"x"}`}), "q", "", nil); !errors.Is(err, errDeleted) {
		t.Errorf("run on a dropped, deleted copy: err = %v, want errDeleted", err)
	}
	if _, ok, _ := store.stored(t, "u", "a"); ok {
		t.Error("a run brought the deleted conversation back")
	}
}

// TestRandomOperationsKeepInvariants runs random changes, runs, drops,
// deletes and lookups on a few conversations at once, with a bound small
// enough to evict all the time; afterwards nothing in memory is unsaved,
// the LRU list matches the map, and no pending entry is left.
func TestRandomOperationsKeepInvariants(t *testing.T) {
	ctx := t.Context()
	m := NewManager(&Options{Store: newMemStore(), MaxConversations: 2})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for i := range 300 {
				id := fmt.Sprint("c", r.IntN(4))
				switch r.IntN(5) {
				case 0:
					_, _ = m.Apply(ctx, "u", id, Op{Kind: OpAddBranch, BranchID: fmt.Sprint("b", g, "_", i), Root: true})
				case 1:
					m.Forget("u", id)
				case 2:
					if r.IntN(4) == 0 {
						_ = m.Delete(ctx, "u", id)
					}
				case 3:
					if c, err := m.Conversation(ctx, "u", id); err == nil {
						_ = c.Run(ctx, script(step{call: "text_response", args: `{"text":"x"}`}), "q", "", nil)
					}
				case 4:
					_, _, _ = m.Existing(ctx, "u", id)
				}
			}
		})
	}
	wg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, c := range m.convs {
		if c.changes != c.saved {
			t.Errorf("%v: %d changes, %d saved", k, c.changes, c.saved)
		}
	}
	n := 0
	for c := m.lru.head; c != nil; c = c.older {
		n++
	}
	if n != len(m.convs) {
		t.Errorf("the LRU list holds %d conversations, the map %d", n, len(m.convs))
	}
	if len(m.pending) != 0 {
		t.Errorf("%d pending entries left", len(m.pending))
	}
}
