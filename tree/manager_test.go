package tree

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/elysia-go/elysia/tools"
)

func ids(tr *Tree, node string) string {
	n, ok := tr.Node(node)
	if !ok {
		return "<no node " + node + ">"
	}
	return strings.Join(n.OptionIDs(), ",")
}

func TestManagerSetToolsReachesEveryTree(t *testing.T) {
	ctx := t.Context()
	m := NewManager(nil)
	a, b := gateway("a"), gateway("b")
	m.SetTools([]Placement{{Tool: a}, {Tool: b}})
	shared, _ := m.Conversation(ctx, "u", "shared")
	if _, err := m.Apply(ctx, "u", "own", Op{Kind: OpAddBranch, BranchID: "extra", Description: "Extra", Root: true}); err != nil {
		t.Fatal(err)
	}
	own, _ := m.Conversation(ctx, "u", "own")
	if got := ids(own.Tree(), "base"); got != "text_response,cited_summarize,mcp_a,mcp_b,extra" {
		t.Fatalf("own tree = %s", got)
	}

	// Add c, remove a, replace b (new value, same name), keeping file order.
	b2, c := gateway("b"), gateway("c")
	m.SetTools([]Placement{{Tool: c}, {Tool: b2}})
	if got := ids(shared.Tree(), "base"); got != "text_response,cited_summarize,mcp_c,mcp_b" {
		t.Errorf("shared tree = %s", got)
	}
	if got := ids(own.Tree(), "base"); got != "text_response,cited_summarize,mcp_c,mcp_b,extra" {
		t.Errorf("own tree = %s", got)
	}
	for _, tr := range []*Tree{shared.Tree(), own.Tree()} {
		if got, _ := tr.Tool("mcp_b"); got != b2 {
			t.Error("mcp_b was not replaced by the new value")
		}
	}
	if got := len(m.AvailableTools()); got != 4 {
		t.Errorf("available tools = %d, want 4", got)
	}
	// A gateway on a configured branch, created when missing.
	m.SetTools([]Placement{{Tool: c, Branch: "servers"}})
	if got := ids(shared.Tree(), "servers"); got != "mcp_c" {
		t.Errorf("servers branch = %s", got)
	}
}

func TestManagerCopyOnWrite(t *testing.T) {
	ctx := t.Context()
	m := NewManager(nil)
	m.SetTools([]Placement{{Tool: gateway("todo")}})
	c1, _ := m.Conversation(ctx, "u", "c1")
	c2, _ := m.Conversation(ctx, "u", "c2")
	if c1.Tree() != c2.Tree() {
		t.Fatal("fresh conversations do not share the default tree")
	}
	if _, err := m.Apply(ctx, "u", "c1", Op{Kind: OpRemoveTool, ToolName: "mcp_todo"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := c1.Tree().Tool("mcp_todo"); ok {
		t.Error("c1 still has mcp_todo")
	}
	if _, ok := c2.Tree().Tool("mcp_todo"); !ok {
		t.Error("c2 lost mcp_todo: the change leaked")
	}
	def, _ := m.DefaultTree("")
	if _, ok := def.Tool("mcp_todo"); !ok || c2.Tree() != def {
		t.Error("the default tree changed")
	}
	if _, err := m.Apply(ctx, "u", "c1", Op{Kind: OpAddTool, ToolName: "mcp_missing"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("adding an unknown tool: %v", err)
	}
	if _, err := m.Apply(ctx, "u", "c1", Op{Kind: OpAddTool, ToolName: "mcp_todo", BranchID: "base"}); err != nil {
		t.Error(err)
	}
	if got := ids(c1.Tree(), "base"); got != "text_response,cited_summarize,mcp_todo" {
		t.Errorf("c1 = %s", got)
	}
	// Re-initialising drops the ops and goes back to the shared tree.
	c1, err := m.InitConversation(ctx, "u", "c1", MultiBranch)
	if err != nil {
		t.Fatal(err)
	}
	if mb, _ := m.DefaultTree(MultiBranch); c1.Tree() != mb {
		t.Error("init did not share the multi_branch default")
	}
}

func TestManagerPersistence(t *testing.T) {
	ctx := t.Context()
	store := newMemStore()
	m := NewManager(&Options{Store: store})
	m.SetTools([]Placement{{Tool: gateway("todo")}})
	if _, err := m.Apply(ctx, "u", "c", Op{Kind: OpAddTool, ToolName: "text_response", FromToolIDs: []string{"mcp_todo"}, Root: true}); !errors.Is(err, ErrExists) {
		t.Fatalf("duplicate add: %v", err)
	}
	if _, err := m.Apply(ctx, "u", "c", Op{Kind: OpAddBranch, BranchID: "more", Root: true}); err != nil {
		t.Fatal(err)
	}
	c, _ := m.Conversation(ctx, "u", "c")
	if err := c.Run(ctx, script(step{call: "mcp_todo", args: `{}`}, step{call: "text_response", args: `{"text":"hi"}`}), "first", "q", nil); err != nil {
		t.Fatal(err)
	}

	// A restart: a new Manager on the same store.
	m2 := NewManager(&Options{Store: store})
	m2.SetTools([]Placement{{Tool: gateway("todo")}})
	c2, err := m2.Conversation(ctx, "u", "c")
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(c2.Tree(), "base"); got != "text_response,cited_summarize,mcp_todo,more" {
		t.Errorf("restored tree = %s", got)
	}
	if h := c2.History(); len(h) != 2 || h[1].Content != "hi" {
		t.Errorf("restored history = %v", h)
	}
	if c2.env.Empty() {
		t.Error("restored environment is empty")
	}
	list, err := m2.Conversations(ctx, "u")
	if err != nil || len(list) != 1 || list[0].Title != "first" {
		t.Errorf("list = %v, %v", list, err)
	}
	if err := m2.Delete(ctx, "u", "c"); err != nil {
		t.Fatal(err)
	}
	if list, _ := m2.Conversations(ctx, "u"); len(list) != 0 {
		t.Errorf("after delete: %v", list)
	}
}

// TestNewConversationIsSaved: looking a conversation up creates it (GET
// /tree), and a created conversation is saved at once with its creation
// time, so that it is listed and a restart brings it back.
func TestNewConversationIsSaved(t *testing.T) {
	ctx := t.Context()
	store := newMemStore()
	m := NewManager(&Options{Store: store})
	if _, err := m.Conversation(ctx, "u", "fresh"); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := store.Load(ctx, "u", "fresh"); !found {
		t.Fatal("a created conversation was not saved")
	}
	m2 := NewManager(&Options{Store: store})
	c, ok, err := m2.Existing(ctx, "u", "fresh")
	if err != nil || !ok || c.Info().UpdatedAt.IsZero() {
		t.Errorf("after a restart: Existing = %v, %v; want fresh with its creation time", ok, err)
	}
}

// TestManagerConcurrentUse has 8 goroutines share 3 conversations, each
// replacing the gateways, adding a branch, running a query and reading the
// tree 20 times, and checks every outcome: no operation fails, every run
// answers and completes, every branch and every query lands in its
// conversation, and the gateways set last are the ones in every tree.
// TestQueryCreatesAndSavesOnce: a query on a new conversation saves it
// once, with the query, not on creation too; and a query that ends before
// its save still leaves the conversation it created saved, as GET /tree
// would.
func TestQueryCreatesAndSavesOnce(t *testing.T) {
	ctx := t.Context()
	st := newMemStore()
	m := NewManager(&Options{Store: st})
	model := script(step{call: "text_response", args: `{"text":"hi"}`})
	if err := m.Query(ctx, model, "u", "fresh", "q1", "hello", nil); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	saves := st.saves
	st.mu.Unlock()
	if saves != 1 {
		t.Errorf("a query on a new conversation saved it %d times; want 1", saves)
	}
	got, ok, events := st.stored(t, "u", "fresh")
	if !ok || len(got.History) != 2 || events == 0 || got.UpdatedAt.IsZero() {
		t.Errorf("saved: ok %v, %d messages, %d events, updated %v; want the query's turn and events", ok, len(got.History), events, got.UpdatedAt)
	}

	if err := m.Query(ctx, nil, "u", "unrun", "q2", "hello", nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Query with a nil model = %v; want ErrInvalid", err)
	}
	if _, ok, _ := st.stored(t, "u", "unrun"); !ok {
		t.Error("a conversation created by a query that did not run was not saved")
	}
	m2 := NewManager(&Options{Store: st})
	c, ok, err := m2.Existing(ctx, "u", "unrun")
	if err != nil || !ok || c.Info().UpdatedAt.IsZero() {
		t.Errorf("after a restart: Existing = %v, %v; want unrun with its creation time", ok, err)
	}
}

func TestManagerConcurrentUse(t *testing.T) {
	const workers, rounds, convs = 8, 20, 3
	ctx := t.Context()
	m := NewManager(nil)
	branch := func(i, j int) string { return fmt.Sprintf("b%d_%d", i, j) }
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds)
	for i := range workers {
		wg.Go(func() {
			conv := fmt.Sprintf("c%d", i%convs)
			for j := range rounds {
				if err := concurrentRound(ctx, m, conv, branch(i, j), fmt.Sprint("g", j%4)); err != nil {
					errs <- fmt.Errorf("worker %d, round %d: %w", i, j, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// Every worker's last round placed g3, so g3 is what every tree holds.
	def, err := m.DefaultTree("")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(def, "base"), "text_response,cited_summarize,mcp_g3"; got != want {
		t.Errorf("default tree = %s, want %s", got, want)
	}
	for k := range convs {
		conv := fmt.Sprintf("c%d", k)
		c, err := m.Conversation(ctx, "u", conv)
		if err != nil {
			t.Fatal(err)
		}
		tr := c.Tree()
		want := []string{"text_response", "cited_summarize", "mcp_g3"}
		queries := 0
		for i := k; i < workers; i += convs {
			for j := range rounds {
				want = append(want, branch(i, j))
			}
			queries += rounds
		}
		base, _ := tr.Node("base")
		got := base.OptionIDs()
		// Branches of different workers interleave; each worker's own
		// keep their order.
		worker := func(id string) string { w, _, _ := strings.Cut(id, "_"); return w }
		if len(got) > 3 {
			slices.SortStableFunc(got[3:], func(a, b string) int { return strings.Compare(worker(a), worker(b)) })
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: root options = %v, want %v", conv, got, want)
		}
		h := c.History()
		if len(h) != 2*queries {
			t.Errorf("%s: history has %d messages, want %d (a question and an answer per query)", conv, len(h), 2*queries)
		}
		for n, msg := range h {
			if wantRole, wantText := []string{"user", "assistant"}[n%2], []string{"q", "x"}[n%2]; msg.Role != wantRole || msg.Content != wantText {
				t.Errorf("%s: history[%d] = %s %q, want %s %q", conv, n, msg.Role, msg.Content, wantRole, wantText)
				break
			}
		}
	}
}

// concurrentRound is one round of TestManagerConcurrentUse: place gateway
// g alone, add branch to conv, run a query that answers "x", and marshal
// the tree. It returns the first thing that went wrong.
func concurrentRound(ctx context.Context, m *Manager, conv, branch, g string) error {
	m.SetTools([]Placement{{Tool: gateway(g)}})
	tr, err := m.Apply(ctx, "u", conv, Op{Kind: OpAddBranch, BranchID: branch, Root: true})
	if err != nil {
		return fmt.Errorf("add branch %s: %w", branch, err)
	}
	if _, ok := tr.Node(branch); !ok {
		return fmt.Errorf("add branch %s: not in the returned tree", branch)
	}
	c, err := m.Conversation(ctx, "u", conv)
	if err != nil {
		return fmt.Errorf("conversation: %w", err)
	}
	var events []tools.Envelope // emit is never called concurrently
	if err := c.Run(ctx, script(step{call: "text_response", args: `{"text":"x"}`}), "q", "", func(e tools.Envelope) { events = append(events, e) }); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	var texts []string
	for _, e := range events {
		if e.Type == tools.EventText {
			texts = append(texts, string(e.Payload))
		}
		if e.Type == tools.EventError {
			return fmt.Errorf("run: error event %s", e.Payload)
		}
	}
	if len(events) == 0 || events[len(events)-1].Type != tools.EventCompleted {
		return fmt.Errorf("run: events %v do not end with completed", eventTypes(events))
	}
	if len(texts) != 1 || !strings.Contains(texts[0], `"x"`) {
		return fmt.Errorf("run: text events %v, want one answering \"x\"", texts)
	}
	b, err := c.Tree().MarshalJSON()
	if err != nil {
		return fmt.Errorf("marshal the tree: %w", err)
	}
	if !json.Valid(b) || !bytes.Contains(b, []byte(`"`+branch+`"`)) {
		return fmt.Errorf("tree JSON lacks branch %s or is invalid: %s", branch, b)
	}
	return nil
}

// eventTypes lists the types of events, for messages.
func eventTypes(events []tools.Envelope) []tools.EventType {
	out := make([]tools.EventType, 0, len(events))
	for _, e := range events {
		out = append(out, e.Type)
	}
	return out
}

// TestIdleConversationMemory checks that idle conversations share the
// default tree and stay small.
func TestIdleConversationMemory(t *testing.T) {
	ctx := t.Context()
	m := NewManager(nil)
	var ps []Placement
	for i := range 20 {
		ps = append(ps, Placement{Tool: gateway(fmt.Sprint("server", i))})
	}
	m.SetTools(ps)
	const n = 2000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range n {
		c, _ := m.Conversation(ctx, "u", fmt.Sprint("c", i))
		_ = c.Tree()
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(m)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	t.Logf("%d bytes per idle conversation", per)
	if per > 20<<10 {
		t.Errorf("%d bytes per idle conversation, want < 20 KiB", per)
	}
}

// TestDeleteDuringRunStaysDeleted deletes a conversation while its query
// waits for the model: the query's end must not save it back, and a caller
// still holding it can neither change nor run it.
func TestDeleteDuringRunStaysDeleted(t *testing.T) {
	ctx := t.Context()
	store := newMemStore()
	m, c := newTestManager(t, &Options{Store: store})
	if _, err := m.Apply(ctx, "alice", "c1", Op{Kind: OpAddBranch, BranchID: "notes", Root: true}); err != nil {
		t.Fatal(err)
	}
	model := script(step{call: "text_response", args: `{"text":"hi"}`})
	model.block = make(chan struct{})
	model.entered = make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, model, "q", "q", nil) }()
	<-model.entered
	if err := m.Delete(ctx, "alice", "c1"); err != nil {
		t.Fatal(err)
	}
	close(model.block)
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if _, ok, n := store.stored(t, "alice", "c1"); ok || n != 0 {
		t.Errorf("after delete: saved = %v with %d events, want nothing", ok, n)
	}

	if _, err := m.applyTo(ctx, c, Op{Kind: OpAddBranch, BranchID: "more", Root: true}); !errors.Is(err, ErrNotFound) {
		t.Errorf("apply to a deleted conversation: err = %v, want ErrNotFound", err)
	}
	if err := c.Run(ctx, script(step{call: "text_response", args: `{"text":"x"}`}), "q2", "", nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("run on a deleted conversation: err = %v, want ErrNotFound", err)
	}
	if _, ok, _ := store.stored(t, "alice", "c1"); ok {
		t.Error("the deleted conversation was saved again")
	}
}

// TestSavesLandInOrder holds one save of a conversation in the Store while
// another change is made: the Store must end with the newer state.
func TestSavesLandInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		store := newMemStore()
		m := NewManager(&Options{Store: store})
		// Created (and saved) first, so that the save held below is the
		// first change's.
		if _, err := m.Conversation(ctx, "u", "c"); err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		var held atomic.Bool
		store.beforeSave = func(ConversationState) {
			if held.CompareAndSwap(false, true) {
				<-release
			}
		}
		errs := make(chan error, 2)
		apply := func(branch string) {
			_, err := m.Apply(ctx, "u", "c", Op{Kind: OpAddBranch, BranchID: branch, Root: true})
			errs <- err
		}
		go apply("first")
		synctest.Wait() // the first save is held in the Store
		go apply("second")
		synctest.Wait()
		close(release)
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		st, _, _ := store.stored(t, "u", "c")
		if got := len(st.Ops); got != 2 {
			t.Errorf("saved %d ops, want 2: an older state was saved last", got)
		}
	})
}

// TestForgetBeforeRunRunsOnCurrentCopy drops a conversation (Forget) that a
// caller is about to run: the query must not run on the dropped copy beside
// a query on the reloaded one, or one of the two answers is lost.
func TestForgetBeforeRunRunsOnCurrentCopy(t *testing.T) {
	ctx := t.Context()
	store := newMemStore()
	m, c := newTestManager(t, &Options{Store: store})
	m.Forget("alice", "c1")
	model := script(step{call: "text_response", args: `{"text":"one"}`})
	model.block = make(chan struct{})
	model.entered = make(chan struct{}, 1)
	done := make(chan error, 2)
	go func() { done <- c.Run(ctx, model, "one", "q1", nil) }()
	<-model.entered
	c2, err := m.Conversation(ctx, "alice", "c1")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		done <- c2.Run(ctx, script(step{call: "text_response", args: `{"text":"two"}`}), "two", "q2", nil)
	}()
	close(model.block)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	st, _, _ := store.stored(t, "alice", "c1")
	var got []string
	for _, msg := range st.History {
		got = append(got, msg.Content)
	}
	if want := []string{"one", "one", "two", "two"}; !slices.Equal(got, want) {
		t.Errorf("saved history = %q, want %q", got, want)
	}
}

// TestDeleteWhileLoadingStaysDeleted deletes a saved conversation while a
// load of it from the Store is in flight: the load, which read the row
// before it was deleted, must not put the conversation back in memory, from
// where the next change would save it again.
func TestDeleteWhileLoadingStaysDeleted(t *testing.T) {
	// hold returns a hook that blocks its first call until release is
	// closed, after telling entered.
	hold := func(entered, release chan struct{}) func() {
		var once sync.Once
		return func() {
			once.Do(func() {
				close(entered)
				<-release
			})
		}
	}
	for _, tc := range []struct {
		name string
		// race runs a load and a Delete of u/c that overlap, and returns
		// the load's error.
		race func(t *testing.T, m *Manager, store *memStore) error
	}{
		{"delete while the load waits for the Store", func(t *testing.T, m *Manager, store *memStore) error {
			t.Helper()
			entered, release := make(chan struct{}), make(chan struct{})
			store.afterLoad = hold(entered, release)
			loadErr := make(chan error, 1)
			go func() {
				_, err := m.Conversation(t.Context(), "u", "c")
				loadErr <- err
			}()
			<-entered
			if err := m.Delete(t.Context(), "u", "c"); err != nil {
				t.Fatal(err)
			}
			close(release)
			return <-loadErr
		}},
		{"load while the Store deletes", func(t *testing.T, m *Manager, store *memStore) error {
			t.Helper()
			entered, release := make(chan struct{}), make(chan struct{})
			store.beforeDelete = hold(entered, release)
			delErr := make(chan error, 1)
			go func() { delErr <- m.Delete(t.Context(), "u", "c") }()
			<-entered
			_, err := m.Conversation(t.Context(), "u", "c")
			close(release)
			if err := <-delErr; err != nil {
				t.Fatal(err)
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			store := newMemStore()
			if _, err := NewManager(&Options{Store: store}).Apply(ctx, "u", "c",
				Op{Kind: OpAddBranch, BranchID: "notes", Root: true}); err != nil {
				t.Fatal(err)
			}
			m := NewManager(&Options{Store: store})
			if err := tc.race(t, m, store); !errors.Is(err, ErrNotFound) {
				t.Errorf("load overlapping the delete: err = %v, want ErrNotFound", err)
			}
			if _, ok, err := m.Existing(ctx, "u", "c"); ok || err != nil {
				t.Errorf("after delete: exists = %v, err = %v; want a deleted conversation", ok, err)
			}
			if list, err := m.Conversations(ctx, "u"); len(list) != 0 || err != nil {
				t.Errorf("after delete: list = %v, err = %v", list, err)
			}
			if _, ok, _ := store.stored(t, "u", "c"); ok {
				t.Error("the deleted conversation is in the Store again")
			}
		})
	}
}
