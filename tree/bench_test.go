package tree

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/tmc/langchaingo/llms"
)

// instantModel answers every decision at once with the same tool call, so
// benchmarks measure the tree's own work.
type instantModel struct{ resp *llms.ContentResponse }

func (m instantModel) GenerateContent(context.Context, []llms.MessageContent, ...llms.CallOption) (*llms.ContentResponse, error) {
	return m.resp, nil
}

func (m instantModel) Call(context.Context, string, ...llms.CallOption) (string, error) {
	return "", nil
}

func gateways(n int) []Placement {
	ps := make([]Placement, n)
	for i := range ps {
		ps[i] = Placement{Tool: gateway(fmt.Sprintf("server_%02d", i))}
	}
	return ps
}

// BenchmarkDecisionStep measures one decision at a root holding 50
// gateways: options, decision context JSON, function schemas, parsing and
// validation of the answer.
func BenchmarkDecisionStep(b *testing.B) {
	m := NewManager(nil)
	m.SetTools(gateways(50))
	c, _ := m.Conversation(context.Background(), "u", "c")
	c.env.Add("mcp_server_00", "list", []map[string]any{{"name": "create_todo", "description": "Create a todo"}}, nil)
	model := instantModel{resp: &llms.ContentResponse{Choices: []*llms.ContentChoice{{
		Content: "Listing.",
		ToolCalls: []llms.ToolCall{{FunctionCall: &llms.FunctionCall{
			Name: "mcp_server_42", Arguments: `{"action":"execute","tool_name":"create_todo","tool_inputs":{"title":"x"}}`}}},
	}}}}
	r := c.newRun(model, "create a todo titled x", "q", nil)
	r.pass = 1
	root := r.tree.Root()
	b.ReportAllocs()
	for b.Loop() {
		d, err := r.decide(context.Background(), root)
		if err != nil || d.opt.id != "mcp_server_42" {
			b.Fatal(d.opt, err)
		}
	}
}

// BenchmarkTreeJSON measures building a default tree with 100 gateways and
// rendering its JSON.
func BenchmarkTreeJSON(b *testing.B) {
	ps := gateways(100)
	b.ReportAllocs()
	for b.Loop() {
		t, _ := New(OneBranch, nil)
		for _, p := range ps {
			t.place(p.Tool, p.Branch, nil)
		}
		if _, err := t.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConversation measures looking up a conversation that is in
// memory, the first step of GET /tree: one conversation again and again,
// 10,000 in turn from parallel goroutines, and those with the rest of GET
// /tree (the tree's JSON, cached). "full" bounds the conversations in
// memory to those 10,000, so that every lookup of the parallel kinds finds
// its conversation among the least recently used.
func BenchmarkConversation(b *testing.B) {
	ctx := context.Background()
	ids := make([]string, 10_000)
	for i := range ids {
		ids[i] = fmt.Sprint("c", i)
	}
	for _, bc := range []struct {
		prefix string
		bound  int
	}{{"", 0}, {"full/", len(ids)}} {
		m := NewManager(&Options{Store: newMemStore(), MaxConversations: bc.bound})
		m.SetTools(gateways(5))
		for _, id := range ids {
			if _, err := m.Conversation(ctx, "u", id); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(bc.prefix+"same", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Conversation(ctx, "u", ids[0]); err != nil {
					b.Fatal(err)
				}
			}
		})
		parallel := func(b *testing.B, get func(c *Conversation) error) {
			b.Helper()
			b.ReportAllocs()
			var next atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				i := int(next.Add(1_000))
				for pb.Next() {
					i++
					c, err := m.Conversation(ctx, "u", ids[i%len(ids)])
					if err == nil {
						err = get(c)
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		b.Run(bc.prefix+"many_parallel", func(b *testing.B) {
			parallel(b, func(*Conversation) error { return nil })
		})
		b.Run(bc.prefix+"get_tree_parallel", func(b *testing.B) {
			parallel(b, func(c *Conversation) error {
				_, err := c.Tree().MarshalJSON()
				return err
			})
		})
	}
}

// BenchmarkGetTree measures the tree side of GET /tree from parallel
// goroutines: looking one of 10,000 conversations up and rendering its tree
// (the JSON is cached per tree). In "shared" the conversations run on the
// default tree; in "own" each has changed its tree (one op), so each
// lookup also checks that its own tree is as new as the registry.
func BenchmarkGetTree(b *testing.B) {
	ctx := context.Background()
	ids := make([]string, 10_000)
	for i := range ids {
		ids[i] = fmt.Sprint("c", i)
	}
	for _, own := range []bool{false, true} {
		name := "shared"
		if own {
			name = "own"
		}
		b.Run(name, func(b *testing.B) {
			m := NewManager(&Options{Store: newMemStore()})
			m.SetTools(gateways(10))
			for _, id := range ids {
				if own {
					if _, err := m.Apply(ctx, "u", id, Op{Kind: OpAddBranch, BranchID: "notes", Root: true}); err != nil {
						b.Fatal(err)
					}
				}
				c, err := m.Conversation(ctx, "u", id)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.Tree().MarshalJSON(); err != nil { // warm the JSON cache
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			var next atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				i := int(next.Add(1_000))
				for pb.Next() {
					i++
					c, err := m.Conversation(ctx, "u", ids[i%len(ids)])
					if err == nil {
						_, err = c.Tree().MarshalJSON()
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkIdleConversationMemory reports the heap held per idle
// conversation on a Manager with 10 gateways and no Store (so nothing but
// the Manager holds them): 10,000 conversations created and their trees
// rendered once, HeapAlloc compared after a GC before and after. B/conv is
// the average over the ops.
func BenchmarkIdleConversationMemory(b *testing.B) {
	const n = 10_000
	ctx := context.Background()
	var total float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		m := NewManager(nil)
		m.SetTools(gateways(10))
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b.StartTimer()
		for j := range n {
			c, err := m.Conversation(ctx, "u", "c"+strconv.Itoa(j))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.Tree().MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(m)
		total += float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
	}
	b.ReportMetric(total/float64(b.N), "B/conv")
}

// BenchmarkSetTools measures a config reload (SetTools, 10 gateways then
// 9 in turn) on a Manager holding 10,000 conversations that have changed
// their tree, so each has its own tree to bring onto the new gateways.
func BenchmarkSetTools(b *testing.B) {
	ctx := context.Background()
	m := NewManager(nil)
	ps := gateways(10)
	m.SetTools(ps)
	for i := range 10_000 {
		if _, err := m.Apply(ctx, "u", fmt.Sprint("c", i), Op{Kind: OpAddBranch, BranchID: "notes", Root: true}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		m.SetTools(ps[:9+i%2])
	}
}
