package tree

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gatedTool is a fake gateway whose Name blocks once, in its first call
// after arm, until release is closed: a test holds the building of a tree
// that places or adds the tool there.
type gatedTool struct {
	*fakeGateway
	armed   atomic.Bool
	entered chan struct{} // closed when the held call starts
	release chan struct{} // closed by the test (once, see hold)
	once    sync.Once
}

func newGatedTool(t *testing.T, server string) *gatedTool {
	t.Helper()
	g := &gatedTool{fakeGateway: gateway(server), entered: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(g.let) // a failed test must not leave the held call blocked
	return g
}

func (g *gatedTool) Name() string {
	if g.armed.CompareAndSwap(true, false) {
		close(g.entered)
		<-g.release
	}
	return g.fakeGateway.Name()
}

// let lets the held call finish.
func (g *gatedTool) let() { g.once.Do(func() { close(g.release) }) }

// held waits until the armed Name call is held.
func (g *gatedTool) held(t *testing.T, what string) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(time.Minute):
		t.Fatalf("%s: the gated tool's Name was never called", what)
	}
}

// within runs f and fails the test when it has not returned after a
// minute: f may block only on a lock that the code under test must not
// hold while g's call is held. On failure it lets g's call finish, and then
// f, before it returns. f reports failures with t.Error.
func within(t *testing.T, g *gatedTool, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Errorf("%s: blocked", what)
		g.let()
		<-done
		t.FailNow()
	}
}

// TestSetToolsDoesNotBlockConversations holds SetTools while it builds the
// new default trees: lookups, tree reads, a change and a query of other
// conversations go on meanwhile on the previous tools, and see the new ones
// once SetTools returns.
func TestSetToolsDoesNotBlockConversations(t *testing.T) {
	ctx := t.Context()
	m := NewManager(&Options{Store: newMemStore()})
	m.SetTools([]Placement{{Tool: gateway("a")}})
	if _, err := m.Apply(ctx, "u", "own", Op{Kind: OpAddBranch, BranchID: "notes", Root: true}); err != nil {
		t.Fatal(err)
	}
	conv(t, m, "shared")
	slow := newGatedTool(t, "slow")
	slow.armed.Store(true)
	set := make(chan struct{})
	go func() {
		defer close(set)
		m.SetTools([]Placement{{Tool: gateway("a")}, {Tool: slow}})
	}()
	slow.held(t, "SetTools")

	within(t, slow, "conversations while SetTools builds", func() {
		for _, id := range []string{"shared", "own", "new"} {
			c, err := m.Conversation(ctx, "u", id)
			if err != nil {
				t.Error(err)
				return
			}
			b, err := c.Tree().MarshalJSON()
			if err != nil || !json.Valid(b) {
				t.Errorf("%s: tree JSON %s, %v", id, b, err)
			}
			if got := ids(c.Tree(), "base"); !strings.Contains(got, "mcp_a") || strings.Contains(got, "mcp_slow") {
				t.Errorf("%s during SetTools: %s, want the previous tools", id, got)
			}
		}
		if _, err := m.Apply(ctx, "u", "shared", Op{Kind: OpAddBranch, BranchID: "more", Root: true}); err != nil {
			t.Error(err)
		}
		c, _ := m.Conversation(ctx, "u", "shared")
		if err := c.Run(ctx, script(step{call: "text_response", args: `{"text":"hi"}`}), "q", "", nil); err != nil {
			t.Error(err)
		}
	})
	slow.let()
	<-set
	for id, want := range map[string]string{
		"shared": "text_response,cited_summarize,mcp_a,mcp_slow,more",
		"own":    "text_response,cited_summarize,mcp_a,mcp_slow,notes",
		"new":    "text_response,cited_summarize,mcp_a,mcp_slow",
	} {
		if got := ids(conv(t, m, id).Tree(), "base"); got != want {
			t.Errorf("%s after SetTools: %s, want %s", id, got, want)
		}
	}
}

// TestRebuildDoesNotBlockOthers holds the lazy rebuild of one
// conversation's own tree after SetTools: other conversations, a lookup of
// the same one, another SetTools and a rebuild on the newer tools go on
// meanwhile, and the held rebuild, on older tools, does not replace the
// newer tree when it ends.
func TestRebuildDoesNotBlockOthers(t *testing.T) {
	ctx := t.Context()
	m := NewManager(nil)
	slow := newGatedTool(t, "slow")
	m.SetTools([]Placement{{Tool: slow}, {Tool: gateway("a")}})
	// own moves slow to a branch, so every rebuild of its tree calls
	// slow.Name (AddTool).
	for _, op := range []Op{
		{Kind: OpAddBranch, BranchID: "x", Root: true},
		{Kind: OpRemoveTool, ToolName: "mcp_slow"},
		{Kind: OpAddTool, ToolName: "mcp_slow", BranchID: "x"},
	} {
		if _, err := m.Apply(ctx, "u", "own", op); err != nil {
			t.Fatal(err)
		}
	}
	own, other := conv(t, m, "own"), conv(t, m, "other")
	m.SetTools([]Placement{{Tool: slow}, {Tool: gateway("b")}})
	slow.armed.Store(true)
	rebuilt := make(chan *Tree, 1)
	go func() { rebuilt <- own.Tree() }()
	slow.held(t, "own.Tree")

	within(t, slow, "others while a rebuild is held", func() {
		if got, want := ids(other.Tree(), "base"), "text_response,cited_summarize,mcp_slow,mcp_b"; got != want {
			t.Errorf("other: %s, want %s", got, want)
		}
		if c, err := m.Conversation(ctx, "u", "own"); err != nil || c != own {
			t.Errorf("lookup of own: %p, %v; want %p", c, err, own)
		}
		if err := other.Run(ctx, script(step{call: "text_response", args: `{"text":"hi"}`}), "q", "", nil); err != nil {
			t.Error(err)
		}
		m.SetTools([]Placement{{Tool: slow}, {Tool: gateway("c")}})
		if got, want := ids(own.Tree(), "base"), "text_response,cited_summarize,mcp_c,x"; got != want {
			t.Errorf("own on the newest tools: %s, want %s", got, want)
		}
	})
	slow.let()
	if got, want := ids(<-rebuilt, "base"), "text_response,cited_summarize,mcp_b,x"; got != want {
		t.Errorf("the held rebuild: %s, want %s", got, want)
	}
	if got, want := ids(own.Tree(), "base"), "text_response,cited_summarize,mcp_c,x"; got != want {
		t.Errorf("own after the held rebuild: %s, want %s (an older tree replaced a newer one)", got, want)
	}
	if got := ids(own.Tree(), "x"); got != "mcp_slow" {
		t.Errorf("own's branch x: %s, want mcp_slow", got)
	}
}

// TestSetToolsWithConcurrentUse swaps the gateways again and again while
// other goroutines look conversations up, read and render their trees,
// change them, run queries and drop them from memory (a bound of 2 and
// Forget, so they come back from the Store). Every tree seen must hold the
// gateways of one SetTools call, never a mix, and every branch its reader
// added before; at the end every tree holds the last gateways, every branch
// and every query.
func TestSetToolsWithConcurrentUse(t *testing.T) {
	const workers, rounds, convs, sets = 6, 25, 3, 150
	ctx := t.Context()
	m := NewManager(&Options{Store: newMemStore(), MaxConversations: 2})
	gws := []*fakeGateway{gateway("g0"), gateway("g1"), gateway("g2")}
	// Call i places gws[i%3] on the root and the next one on "servers".
	placements := func(i int) []Placement {
		return []Placement{{Tool: gws[i%3]}, {Tool: gws[(i+1)%3], Branch: "servers"}}
	}
	m.SetTools(placements(0))
	// consistent reports what is wrong with tr, if anything: the gateways
	// of more than one call, or a missing branch of mine.
	consistent := func(tr *Tree, mine []string) error {
		base, _ := tr.Node("base")
		var root []string
		for _, id := range base.OptionIDs() {
			if strings.HasPrefix(id, "mcp_") {
				root = append(root, id)
			}
		}
		servers := ids(tr, "servers")
		if len(root) != 1 {
			return fmt.Errorf("root gateways %v", root)
		}
		k := int(strings.TrimPrefix(root[0], "mcp_g")[0] - '0')
		if want := fmt.Sprint("mcp_g", (k+1)%3); servers != want {
			return fmt.Errorf("root has %s and servers %s: a mix of two calls", root[0], servers)
		}
		for _, b := range mine {
			if _, ok := tr.Node(b); !ok {
				return fmt.Errorf("branch %s is missing", b)
			}
		}
		return nil
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		r := rand.New(rand.NewPCG(1, 2))
		for i := range sets {
			m.SetTools(placements(i))
			m.Forget("u", fmt.Sprint("c", r.IntN(convs)))
		}
	})
	queries := make([]atomic.Int64, convs)
	for w := range workers {
		wg.Go(func() {
			id := fmt.Sprint("c", w%convs)
			var mine []string
			for j := range rounds {
				b := fmt.Sprintf("w%d_%d", w, j)
				if _, err := m.Apply(ctx, "u", id, Op{Kind: OpAddBranch, BranchID: b, Root: true}); err != nil {
					t.Errorf("apply %s: %v", b, err)
					return
				}
				mine = append(mine, b)
				c, err := m.Conversation(ctx, "u", id)
				if err != nil {
					t.Error(err)
					return
				}
				if err := consistent(c.Tree(), mine); err != nil {
					t.Errorf("%s after adding %s: %v", id, b, err)
					return
				}
				if js, err := c.Tree().MarshalJSON(); err != nil || !json.Valid(js) {
					t.Errorf("%s: tree JSON %v", id, err)
					return
				}
				if err := c.Run(ctx, script(step{call: "text_response", args: `{"text":"x"}`}), "q", "", nil); err != nil {
					t.Errorf("%s: run: %v", id, err)
					return
				}
				queries[w%convs].Add(1)
			}
		})
	}
	wg.Wait()

	m.SetTools(placements(sets))
	for k := range convs {
		id := fmt.Sprint("c", k)
		var all []string
		for w := k; w < workers; w += convs {
			for j := range rounds {
				all = append(all, fmt.Sprintf("w%d_%d", w, j))
			}
		}
		c := conv(t, m, id)
		tr := c.Tree()
		if err := consistent(tr, all); err != nil {
			t.Errorf("%s at the end: %v", id, err)
		}
		if got, want := ids(tr, "servers"), fmt.Sprint("mcp_g", (sets+1)%3); got != want {
			t.Errorf("%s at the end: servers holds %s, want %s", id, got, want)
		}
		if got, want := len(c.History()), 2*int(queries[k].Load()); got != want {
			t.Errorf("%s: %d messages, want %d", id, got, want)
		}
	}
}

// TestRegistryGenerations publishes snapshots from many goroutines: each
// gets its own generation, and the current one is the highest.
func TestRegistryGenerations(t *testing.T) {
	const goroutines, sets = 8, 50
	r := registry{logger: slog.New(slog.DiscardHandler)}
	r.set(nil)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range sets {
				r.set([]Placement{{Tool: gateway(fmt.Sprint("g", g, "_", i))}})
			}
		})
	}
	wg.Wait()
	if got, want := r.load().gen, uint64(1+goroutines*sets); got != want {
		t.Errorf("generation %d, want %d: a snapshot was lost or numbered twice", got, want)
	}
	if got := len(r.load().placements); got != 1 {
		t.Errorf("%d current placements, want one call's", got)
	}
}
