package adapter

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/elysia-go/elysia/discovery"
	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/tree"
)

func TestGatewayMetricsCountCalls(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newGatewayMetrics(reg)
	m.ObserveCall("todo", "create_todo", mcpgateway.CallSuccess, 3*time.Millisecond)
	m.ObserveCall("todo", "create_todo", mcpgateway.CallTimeout, time.Second)
	// Again, on the series found the first time, and another server.
	m.ObserveCall("todo", "list_todos", mcpgateway.CallSuccess, time.Millisecond)
	m.ObserveCall("todo", "create_todo", mcpgateway.CallTimeout, time.Second)
	m.ObserveCall("notes", "add", mcpgateway.CallSuccess, time.Millisecond)

	if got := testutil.ToFloat64(m.calls.WithLabelValues("todo", "success")); got != 2 {
		t.Errorf("success calls = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.calls.WithLabelValues("todo", "timeout")); got != 2 {
		t.Errorf("timed out calls = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.failures.WithLabelValues("todo")); got != 2 {
		t.Errorf("failures = %v, want 2 (a timeout is a failure)", got)
	}
	if got := testutil.ToFloat64(m.calls.WithLabelValues("notes", "success")); got != 1 {
		t.Errorf("calls of the other server = %v, want 1", got)
	}
	if n := testutil.CollectAndCount(m.latency); n != 2 {
		t.Errorf("latency series = %d, want 2 (one per server)", n)
	}
	if n := testutil.CollectAndCount(m.failures); n != 1 {
		t.Errorf("failure series = %d, want 1: a server without failures has none", n)
	}
}

// TestGatewayCollectorFollowsARealServer scrapes the session and process
// gauges before and after a real todo-mcp call.
func TestGatewayCollectorFollowsARealServer(t *testing.T) {
	bin := testenv.TodoMCP(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mcp.json")
	body := `{"servers": {"todo": {"command": "` + bin + `", "env": {"TODO_DB": "` + filepath.Join(dir, "t.db") + `"}}}}`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	metrics := newGatewayMetrics(reg)
	d := discovery.New(cfg, tree.NewManager(nil), &discovery.Options{Gateway: &mcpgateway.Options{Observer: metrics}})
	defer func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	if err := d.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(newGatewayCollector(d))

	want := `
# HELP elysia_mcp_circuit_state Circuit breaker state by server: 0 closed, 1 half-open, 2 open.
# TYPE elysia_mcp_circuit_state gauge
elysia_mcp_circuit_state{server="todo"} 0
# HELP elysia_mcp_child_processes Running stdio child processes by server, every user's included.
# TYPE elysia_mcp_child_processes gauge
elysia_mcp_child_processes{server="todo"} 0
# HELP elysia_mcp_sessions Live MCP sessions by server: the shared one and every user's.
# TYPE elysia_mcp_sessions gauge
elysia_mcp_sessions{server="todo"} 0
`
	gauges := []string{"elysia_mcp_sessions", "elysia_mcp_child_processes", "elysia_mcp_circuit_state"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), gauges...); err != nil {
		t.Fatalf("before the first call (lazy: nothing spawned, the circuit already shown):\n%v", err)
	}

	g, _ := d.Gateway("todo")
	if _, err := g.Execute(t.Context(), "create_todo", map[string]any{"title": "metrics"}); err != nil {
		t.Fatal(err)
	}
	want = strings.ReplaceAll(want, `"todo"} 0`, `"todo"} 1`)
	want = strings.ReplaceAll(want, `elysia_mcp_circuit_state{server="todo"} 1`, `elysia_mcp_circuit_state{server="todo"} 0`)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), gauges...); err != nil {
		t.Fatalf("after a call:\n%v", err)
	}
	if got := testutil.ToFloat64(metrics.calls.WithLabelValues("todo", mcpgateway.CallSuccess)); got != 1 {
		t.Errorf("success calls = %v, want 1", got)
	}
}

// TestGatewayCollectorCountsUsersSessions scrapes a per-user todo-mcp
// server that three users called: three sessions, three processes and
// three users' sessions, none busy (it said 0 sessions with users
// connected).
func TestGatewayCollectorCountsUsersSessions(t *testing.T) {
	bin := testenv.TodoMCP(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mcp.json")
	body := `{"servers": {"todo": {"command": "` + bin + `", "per_user": true, "env": {"TODO_DB": "` + filepath.Join(dir, "t.db") + `"}}}}`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	d := discovery.New(cfg, tree.NewManager(nil), &discovery.Options{Gateway: &mcpgateway.Options{CloseGrace: time.Second}})
	defer func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	if err := d.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(newGatewayCollector(d))
	g, _ := d.Gateway("todo")
	for _, u := range []string{"alice", "bob", "carol"} {
		if _, err := g.Execute(mcpgateway.WithUser(t.Context(), u), "list_todos", map[string]any{}); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
	}
	for name, want := range map[string]float64{"elysia_mcp_sessions": 3, "elysia_mcp_child_processes": 3,
		"elysia_mcp_user_sessions": 3, "elysia_mcp_user_sessions_busy": 0} {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := -1.0
		for _, mf := range mfs {
			if mf.GetName() == name {
				got = mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		if got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

// TestGatewayCollectorCopies: a server with copies has each copy's
// serving, down, circuit and call series under a copy label.
func TestGatewayCollectorCopies(t *testing.T) {
	bin := testenv.TodoMCP(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mcp.json")
	body := `{"servers": {"todo": {"command": "./no-such-server", "copies": [{"command": "` + bin + `", "env": {"TODO_DB": "` + filepath.Join(dir, "t.db") + `"}}]}}}`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	d := discovery.New(cfg, tree.NewManager(nil), &discovery.Options{Gateway: &mcpgateway.Options{Observer: newGatewayMetrics(reg)}})
	defer func() { _ = d.Close() }()
	if err := d.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(newGatewayCollector(d))
	if _, err := d.Gateways()[0].Execute(t.Context(), "list_todos", nil); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP elysia_mcp_copy_calls_total Calls sent to each copy of a server with copies.
# TYPE elysia_mcp_copy_calls_total counter
elysia_mcp_copy_calls_total{copy="1",server="todo"} 0
elysia_mcp_copy_calls_total{copy="2",server="todo"} 1
# HELP elysia_mcp_copy_down 1 for each copy of a server with copies that calls fail over from.
# TYPE elysia_mcp_copy_down gauge
elysia_mcp_copy_down{copy="1",server="todo"} 1
elysia_mcp_copy_down{copy="2",server="todo"} 0
# HELP elysia_mcp_copy_serving 1 for each copy of a server with copies that takes calls now.
# TYPE elysia_mcp_copy_serving gauge
elysia_mcp_copy_serving{copy="1",server="todo"} 0
elysia_mcp_copy_serving{copy="2",server="todo"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "elysia_mcp_copy_calls_total", "elysia_mcp_copy_down", "elysia_mcp_copy_serving"); err != nil {
		t.Error(err)
	}
}
