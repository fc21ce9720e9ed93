package mcpgateway

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

// progressServer is an in-process server whose tool "work" sends n progress
// notifications, each carrying its send time in its message, then waits
// until the user's emitter has had the last (got): mcp-go's in-process
// transport delivers notifications on a goroutine of their own, which a
// returned call would otherwise outrun. The gateway coalesces the reports
// that come within ProgressInterval of each other, so not every one of
// them reaches the emitter.
func progressServer(n int, got <-chan struct{}) *mcpserver.MCPServer {
	srv := mcpserver.NewMCPServer("progress", "1.0.0", mcpserver.WithToolCapabilities(false))
	srv.AddTool(mcp.NewTool("work"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		token := req.Params.Meta.ProgressToken
		s := mcpserver.ServerFromContext(ctx)
		for i := 1; i <= n; i++ {
			_ = s.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
				"progressToken": token, "progress": i, "total": n,
				"message": strconv.FormatInt(time.Now().UnixNano(), 10),
			})
		}
		select {
		case <-got:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return mcp.NewToolResultText("done"), nil
	})
	return srv
}

// latencies records how long each progress event took from the server's
// send to the user's emitter.
type latencies struct {
	got chan struct{} // one token per call: its last progress event
	mu  sync.Mutex
	d   []time.Duration
}

func (l *latencies) Emit(ev tools.Event) {
	p, ok := ev.Payload.(tools.ProgressPayload)
	if !ok {
		return
	}
	sent, err := strconv.ParseInt(p.Message, 10, 64)
	if err != nil {
		return
	}
	l.mu.Lock()
	l.d = append(l.d, time.Since(time.Unix(0, sent)))
	l.mu.Unlock()
	if p.Total != nil && p.Progress == *p.Total {
		l.got <- struct{}{}
	}
}

// BenchmarkProgressRelay measures how long a progress notification takes
// from the server to the emitter of the user whose call it is (in process,
// so the gateway's own relay is what is measured); it reports the median
// and p99 per progress event that reaches the user, which ProgressInterval
// may hold back.
func BenchmarkProgressRelay(b *testing.B) {
	const perCall = 100
	l := &latencies{got: make(chan struct{}, 1)}
	srv := progressServer(perCall, l.got)
	g := New(mcpconfig.ServerConfig{Name: "progress", Transport: mcpconfig.TransportHTTP, URL: "http://in-process/mcp", Enabled: true}, nil)
	g.shared.conns[0].SetDialer(dialInProcess(g.shared.conns[0], func() mcptransport.Interface { return mcptransport.NewInProcessTransport(srv) }))
	b.Cleanup(func() { _ = g.Close() })
	for b.Loop() {
		if _, err := g.ExecuteWith(b.Context(), "work", nil, l); err != nil {
			b.Fatal(err)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		b.Fatal("no progress reached the emitter")
	}
	slices.Sort(l.d)
	b.ReportMetric(float64(l.d[len(l.d)/2].Microseconds()), "p50-µs/progress")
	b.ReportMetric(float64(l.d[len(l.d)*99/100].Microseconds()), "p99-µs/progress")
}
