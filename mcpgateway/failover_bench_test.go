package mcpgateway

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// BenchmarkExecuteCopies is the cost of copies on a call that needs no
// failover: one execute on a stdio todo-mcp without copies, and on the same
// server with two HTTP copies behind it (priority, every copy up).
func BenchmarkExecuteCopies(b *testing.B) {
	stdio := mcpconfig.ServerConfig{Name: "todo", Transport: mcpconfig.TransportStdio, Command: testenv.TodoMCP(b), Enabled: true,
		Env: map[string]string{"TODO_DB": filepath.Join(b.TempDir(), "todos.db")}}
	spare1, spare2 := startTodo(b, "http"), startTodo(b, "http")
	inputs := map[string]any{"status": "active"}
	for _, tc := range []struct {
		name string
		cfg  mcpconfig.ServerConfig
	}{
		{"none", stdio},
		{"two", withCopies(stdio, "", spare1.copyOf("todo"), spare2.copyOf("todo"))},
	} {
		b.Run(tc.name, func(b *testing.B) {
			g := New(tc.cfg, nil)
			b.Cleanup(func() { _ = g.Close() })
			if _, err := g.Execute(b.Context(), "list_todos", inputs); err != nil {
				b.Fatal(err)
			}
			runBench(b, func() {
				if _, err := g.Execute(b.Context(), "list_todos", inputs); err != nil {
					b.Error(err)
				}
			})
		})
	}
}

// BenchmarkFailoverTime measures, over failoverTrials kills of the primary
// copy (SIGKILL of its todo-mcp process), the time from the kill to the
// first call served by the second copy, with calls made back to back. Each
// trial has a gateway of its own, connected to the primary first, so that
// no trial waits out the back-off a copy killed again and again earns
// (TestCopyFlapsBackOff). It reports the median, p99 and worst in ms; run
// it with -benchtime 1x.
func BenchmarkFailoverTime(b *testing.B) {
	const failoverTrials = 100
	a, c := startTodo(b, "http"), startTodo(b, "http")
	cfg := withCopies(a.copyOf("todo"), "", c.copyOf("todo"))
	for b.Loop() {
		var took []time.Duration
		for range failoverTrials {
			took = append(took, failoverOnce(b, cfg, a, c))
			testenv.WaitFor(b, 10*time.Second, "the killed primary's port to close", func() bool { return !listening(a.port) })
			a.start()
		}
		slices.Sort(took)
		b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(took[len(took)-1].Microseconds())/1000, "max-ms")
	}
}

// failoverOnce is one trial of BenchmarkFailoverTime: a gateway serving
// from a, a killed, calls until one is served by c.
func failoverOnce(b *testing.B, cfg mcpconfig.ServerConfig, a, c *todoProc) time.Duration {
	b.Helper()
	g := New(cfg, nil)
	defer func() { _ = g.Close() }()
	if pid, err := readPID(b, g, b.Context(), 0); err != nil || pid != a.pid() {
		b.Fatalf("before the kill: answered by %d (%v), want the primary (%d)", pid, err, a.pid())
	}
	start := time.Now()
	a.mu.Lock()
	_ = a.cmd.Process.Kill()
	a.mu.Unlock()
	for {
		pid, err := readPID(b, g, b.Context(), 0)
		if err == nil && pid == c.pid() {
			return time.Since(start)
		}
		if time.Since(start) > 10*time.Second {
			b.Fatalf("no call served by copy 2 within 10 s of the kill (last: %d, %v)", pid, err)
		}
	}
}

// BenchmarkExecuteCopiesPaired is BenchmarkExecuteCopies with the two
// gateways called alternately, so that both see the same load: it reports
// each one's median per call and the ratio (copies/none).
func BenchmarkExecuteCopiesPaired(b *testing.B) {
	stdio := mcpconfig.ServerConfig{Name: "todo", Transport: mcpconfig.TransportStdio, Command: testenv.TodoMCP(b), Enabled: true,
		Env: map[string]string{"TODO_DB": filepath.Join(b.TempDir(), "todos.db")}}
	spare1, spare2 := startTodo(b, "http"), startTodo(b, "http")
	none, two := New(stdio, nil), New(withCopies(stdio, "", spare1.copyOf("todo"), spare2.copyOf("todo")), nil)
	b.Cleanup(func() { _, _ = none.Close(), two.Close() })
	inputs := map[string]any{"status": "active"}
	timed := func(g *Gateway) time.Duration {
		start := time.Now()
		if _, err := g.Execute(b.Context(), "list_todos", inputs); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	timed(none)
	timed(two)
	var tn, tt []time.Duration
	for b.Loop() {
		tn = append(tn, timed(none))
		tt = append(tt, timed(two))
	}
	slices.Sort(tn)
	slices.Sort(tt)
	mn, mt := tn[len(tn)/2], tt[len(tt)/2]
	b.ReportMetric(float64(mn.Nanoseconds())/1000, "none-µs")
	b.ReportMetric(float64(mt.Nanoseconds())/1000, "copies-µs")
	b.ReportMetric(float64(mt)/float64(mn), "ratio")
}
