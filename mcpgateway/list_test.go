package mcpgateway

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/tools"
)

// TestListChangedDuringListIsNotLost adds a tool (the server sends
// tools/list_changed) while a tools/list is in flight: the list that was
// answered before the change must not be kept as fresh.
func TestListChangedDuringListIsNotLost(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p, g := newInProcess(t, nil)
		ctx := t.Context()
		if err := g.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		gate := make(chan struct{})
		p.mu.Lock()
		p.listGate = gate
		srv := p.srv
		p.mu.Unlock()

		first := make(chan []ToolInfo, 1)
		go func() {
			infos, err := g.List(ctx)
			if err != nil {
				t.Errorf("first list: %v", err)
			}
			first <- infos
		}()
		synctest.Wait() // the list is held at the gate
		srv.AddTool(mcp.NewTool("added"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
		synctest.Wait() // the notification has arrived
		close(gate)
		<-first
		synctest.Wait() // the refresh after list_changed has run

		infos, err := g.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(infos, func(ti ToolInfo) bool { return ti.Name == "added" }) {
			t.Errorf("tools after list_changed = %v, want 'added' among them", toolNames(infos))
		}
		if _, err := g.Execute(ctx, "added", nil); err != nil {
			t.Errorf("execute the added tool: %v", err)
		}
		_ = g.Close()
	})
}

func toolNames(infos []ToolInfo) []string {
	out := make([]string, len(infos))
	for i, ti := range infos {
		out[i] = ti.Name
	}
	return out
}

// TestListTimeoutsOpenTheCircuit lists a server that never answers
// tools/list: each timeout counts as a failure, as a call's would, and the
// circuit opens after CircuitFailures of them.
func TestListTimeoutsOpenTheCircuit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p, g := newInProcess(t, &Options{CircuitFailures: 5})
		g.cfg.CallTimeout = time.Second
		p.mu.Lock()
		p.hangList = true
		p.mu.Unlock()
		ctx := t.Context()
		list := tools.Call{Args: map[string]any{"action": "list"}}
		for i := range 5 {
			res, err := g.Run(ctx, list, tools.Discard)
			if err != nil || !res.IsError || !strings.Contains(res.Error, "call_timeout") {
				t.Fatalf("list %d = %v %+v, want a timeout", i, err, res)
			}
		}
		st := g.Status()
		if st.Failures != 5 || st.Circuit.State != CircuitOpen {
			t.Fatalf("after 5 list timeouts: failures %d, circuit %s; want 5 and open", st.Failures, st.Circuit.State)
		}
		res, err := g.Run(ctx, list, tools.Discard)
		if err != nil || !res.IsError || !strings.Contains(res.Error, "circuit open") {
			t.Errorf("list with the circuit open = %v %+v, want a refusal", err, res)
		}
		_ = g.Close()
	})
}

// TestStaleListCarriesTheRealState answers a list from the cache while the
// circuit is open: the answer is marked stale and carries the server's
// actual state and circuit, not a fixed "failed".
func TestStaleListCarriesTheRealState(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p, g := newInProcess(t, &Options{CircuitFailures: 2})
		ctx := t.Context()
		list := tools.Call{Args: map[string]any{"action": "list"}}
		if _, err := g.Run(ctx, list, tools.Discard); err != nil {
			t.Fatal(err)
		}
		p.loseNext(2)
		for range 2 {
			if _, err := g.Execute(ctx, "append", nil); err == nil {
				t.Fatal("lost call succeeded")
			}
		}
		if g.Status().Circuit.State != CircuitOpen {
			t.Fatalf("circuit = %s, want open", g.Status().Circuit.State)
		}
		killSession(g)
		synctest.Wait()
		res, err := g.Run(ctx, list, tools.Discard)
		if err != nil || res.IsError || len(res.Objects) != 6 {
			t.Fatalf("list with the circuit open = %v %+v, want the cached tools", err, res)
		}
		circuit, _ := res.Metadata["circuit"].(map[string]any)
		if res.Metadata["stale"] != true || res.Metadata["state"] != string(g.Status().State) || circuit["state"] != CircuitOpen {
			t.Errorf("metadata = %v, want stale, the state %q and the open circuit", res.Metadata, g.Status().State)
		}
		if le, _ := res.Metadata["last_error"].(string); !strings.Contains(le, "circuit open") {
			t.Errorf("last_error = %q, want why", le)
		}
		_ = g.Close()
	})
}
