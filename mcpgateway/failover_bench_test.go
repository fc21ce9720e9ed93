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
// first call served by the second copy, with calls made back to back; the
// primary is started again and takes the calls back between trials. It
// reports the median and p99 in ms; run it with -benchtime 1x.
func BenchmarkFailoverTime(b *testing.B) {
	const failoverTrials = 100
	a, c := startTodo(b, "http"), startTodo(b, "http")
	// Every kill is a death of the copy's session: without a high
	// CrashLoopDeaths the primary would sit out a crash-loop back-off.
	g := New(withCopies(a.copyOf("todo"), "", c.copyOf("todo")), &Options{CopyProbe: 20 * time.Millisecond, CrashLoopDeaths: 1 << 20})
	b.Cleanup(func() { _ = g.Close() })
	for b.Loop() {
		var took []time.Duration
		for range failoverTrials {
			testenv.WaitFor(b, 30*time.Second, "the primary to serve", func() bool {
				pid, err := readPID(b, g, b.Context(), 0)
				return err == nil && pid == a.pid()
			})
			start := time.Now()
			a.mu.Lock()
			_ = a.cmd.Process.Kill()
			a.mu.Unlock()
			for {
				pid, err := readPID(b, g, b.Context(), 0)
				if err == nil && pid == c.pid() {
					break
				}
				if time.Since(start) > 10*time.Second {
					b.Fatalf("no call served by copy 2 within 10 s of the kill (last: %d, %v)", pid, err)
				}
			}
			took = append(took, time.Since(start))
			testenv.WaitFor(b, 10*time.Second, "the killed primary's port to close", func() bool { return !listening(a.port) })
			a.start()
		}
		slices.Sort(took)
		b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(took[len(took)-1].Microseconds())/1000, "max-ms")
	}
}
