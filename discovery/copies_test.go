package discovery

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/tree"
)

// TestReloadOfCopiesKeepsCallsInFlight: editing a server's copies replaces
// its gateway, and a call in flight on the old one ends there, answered by
// the copy it started on.
func TestReloadOfCopiesKeepsCallsInFlight(t *testing.T) {
	bin := testenv.TodoMCP(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	withCopy := func(db string) string {
		return fmt.Sprintf(`{"servers": {"todo": {"command": %q, "args": ["--fault-tools"], "env": {"TODO_DB": %q},
			"copies": [{"command": %q, "args": ["--fault-tools"], "env": {"TODO_DB": %q}}]}}}`,
			bin, filepath.Join(dir, "a.db"), bin, filepath.Join(dir, db))
	}
	writeConfig(t, path, withCopy("b.db"))
	reloads := make(chan error, 64)
	d := New(path, tree.NewManager(nil), &Options{
		Debounce:   20 * time.Millisecond,
		DrainGrace: 10 * time.Second,
		Gateway:    &mcpgateway.Options{CloseGrace: 500 * time.Millisecond},
		OnReload:   func(err error) { reloads <- err },
	})
	defer closeDiscovery(t, d)
	if err := d.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := d.Watch(); err != nil {
		t.Fatal(err)
	}
	g, _ := d.Gateway("todo")
	if _, err := g.Execute(t.Context(), "list_todos", nil); err != nil {
		t.Fatal(err)
	}
	pid := g.Status().PID
	type outcome struct {
		res *mcpgateway.CallResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := g.Execute(t.Context(), "fault_read", map[string]any{"delay_ms": 1500})
		done <- outcome{res, err}
	}()
	testenv.WaitFor(t, 5*time.Second, "the call to be in flight", func() bool { return g.InFlight() == 1 })
	writeConfig(t, path, withCopy("c.db"))
	testenv.WaitFor(t, 5*time.Second, "the gateway to be replaced", func() bool {
		g2, _ := d.Gateway("todo")
		return g2 != g
	})
	o := <-done
	if o.err != nil || o.res.IsError || !strings.Contains(o.res.Text(), fmt.Sprintf("read by pid %d", pid)) {
		t.Fatalf("the call in flight during the reload = %+v, %v; want it answered by copy 1 (pid %d)", o.res, o.err, pid)
	}
	g2, _ := d.Gateway("todo")
	if st := g2.Status(); len(st.Copies) != 2 || !strings.Contains(st.Copies[1].Where, bin) {
		t.Errorf("the new gateway's copies = %+v", st.Copies)
	}
	if len(g2.Config().Copies) != 1 || g2.Config().Copies[0].Env["TODO_DB"] != filepath.Join(dir, "c.db") {
		t.Errorf("the new gateway's copy = %+v, want the edited one", g2.Config().Copies)
	}
}
