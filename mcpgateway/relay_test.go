package mcpgateway

import (
	"context"
	"errors"
	"io"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

// pipeGateway returns a gateway to srv, served by mcp-go's stdio server
// over pipes: one transport read loop, as with a child process, which a
// slow handler of the gateway would hold up for every user of the server.
func pipeGateway(t *testing.T, srv *mcpserver.MCPServer) *Gateway {
	t.Helper()
	// Cleanups run last first: Close, then the server's output is closed
	// (a server still writing gets an error, as a child's write to a
	// closed stdout would), then its goroutines are waited for.
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	var mu sync.Mutex
	var outs []*io.PipeReader
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range outs {
			_ = r.Close()
		}
	})
	g := newGateway(t, mcpconfig.ServerConfig{Name: "piped", Transport: mcpconfig.TransportStdio, Command: "unused", Enabled: true}, nil)
	c := g.shared.conns[0]
	c.SetDialer(func(hsCtx context.Context) (*session.Session, error) {
		inR, inW := io.Pipe()   // gateway -> server
		outR, outW := io.Pipe() // server -> gateway
		mu.Lock()
		outs = append(outs, outR)
		mu.Unlock()
		wg.Go(func() {
			_ = mcpserver.NewStdioServer(srv).Listen(context.Background(), inR, outW)
			_ = outW.Close()
			_ = inR.Close()
		})
		return c.DialTransport(hsCtx, mcpconfig.TransportStdio, mcptransport.NewIO(outR, inW, nil))
	})
	return g
}

// stalledStream is the stream of a user who never reads: its first
// progress event blocks until release is closed; it records every event.
type stalledStream struct {
	release <-chan struct{}
	entered chan struct{} // closed at the first progress event
	once    sync.Once
	userStream
}

func (s *stalledStream) Emit(ev tools.Event) {
	if _, ok := ev.Payload.(tools.ProgressPayload); ok {
		s.once.Do(func() { close(s.entered) })
		<-s.release
	}
	s.userStream.Emit(ev)
}

// floodServer is a server whose tool "flood" sends n progress
// notifications (none dropped), then waits for hold to close (or its call to end); "ping"
// answers at once.
func floodServer(n int, hold <-chan struct{}) *mcpserver.MCPServer {
	srv := mcpserver.NewMCPServer("flood", "1.0.0", mcpserver.WithToolCapabilities(false))
	srv.AddTool(mcp.NewTool("flood"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s := mcpserver.ServerFromContext(ctx)
		for i := 1; i <= n; i++ {
			// mcp-go's stdio server drops a notification when its queue to
			// the client is full: send each one until it is taken.
			for {
				err := s.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress),
					map[string]any{"progressToken": req.Params.Meta.ProgressToken, "progress": i, "total": n})
				if !errors.Is(err, mcpserver.ErrNotificationChannelBlocked) {
					break
				}
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				runtime.Gosched()
			}
		}
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return mcp.NewToolResultText("flooded"), nil
	})
	srv.AddTool(mcp.NewTool("ping"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("pong"), nil
	})
	return srv
}

// TestStalledStreamDoesNotBlockOtherUsers is issue 18's scenario: user A's
// call streams progress into a stream that is never read; user B's call to
// the same shared server completes at once all the same, and A, once its
// stream drains, gets the call's last progress.
func TestStalledStreamDoesNotBlockOtherUsers(t *testing.T) {
	// Not parallel: its server spins on a full queue, and needs the CPU.
	const n = 200
	hold, release := make(chan struct{}), make(chan struct{})
	g := pipeGateway(t, floodServer(n, hold))
	letGo := sync.OnceFunc(func() { close(hold); close(release) })
	t.Cleanup(letGo) // before Close, should the test fail
	alice := &stalledStream{release: release, entered: make(chan struct{})}
	aliceDone := make(chan tools.Result, 1)
	go func() {
		res, _ := g.Run(t.Context(), tools.Call{UserID: "alice", Args: map[string]any{"action": "execute", "tool_name": "flood"}}, alice)
		aliceDone <- res
	}()
	select {
	case <-alice.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("alice's call reported no progress")
	}

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	res, err := g.Run(ctx, tools.Call{UserID: "bob", Args: map[string]any{"action": "execute", "tool_name": "ping"}}, &userStream{})
	if err != nil || res.IsError || !strings.Contains(res.LLMText, "pong") {
		t.Fatalf("bob's call while alice's stream stalls = %v %+v, want pong at once", err, res)
	}

	// mcp-go's stdio server may write a result before the notifications
	// it queued earlier: the tool answers only once all have come.
	testenv.WaitFor(t, 10*time.Second, "alice's progress to reach the gateway", func() bool {
		return reported(g, "alice") == n
	})
	letGo()
	res = <-aliceDone
	if res.IsError {
		t.Fatalf("alice's call = %+v", res)
	}
	ps := alice.progress()
	if len(ps) == 0 || ps[len(ps)-1].Progress != n {
		t.Fatalf("alice got %d progress events, the last %+v; want the last to be %d", len(ps), ps[len(ps)-1:], n)
	}
	if len(ps) > 3 {
		t.Errorf("alice's stalled stream got %d progress events, want the backlog coalesced (at most 3)", len(ps))
	}
}

// reported returns the progress last reported to the gateway by user's call
// in flight.
func reported(g *Gateway, user string) float64 {
	s := g.shared.conns[0].Current()
	if s == nil {
		return 0
	}
	return s.Reported(user)
}

// TestProgressFloodIsCoalesced: 5,000 progress notifications in one call
// reach the user as at most one event per ProgressInterval, the last one
// always among them.
func TestProgressFloodIsCoalesced(t *testing.T) {
	// Not parallel: its server spins on a full queue, and needs the CPU.
	const n = 5000
	hold := make(chan struct{})
	g := pipeGateway(t, floodServer(n, hold))
	letGo := sync.OnceFunc(func() { close(hold) })
	t.Cleanup(letGo)
	u := &userStream{}
	start := time.Now()
	done := make(chan tools.Result, 1)
	go func() { done <- run(t, g, u, "flood", nil) }()
	testenv.WaitFor(t, 30*time.Second, "the progress to reach the gateway", func() bool { return reported(g, "alice") == n })
	letGo()
	if res := <-done; res.IsError {
		t.Fatalf("result %+v", res)
	}
	took := time.Since(start)
	ps := u.progress()
	if max := int(took/session.ProgressInterval) + 2; len(ps) > max {
		t.Errorf("%d progress events in %v, want at most %d (one per %v)", len(ps), took, max, session.ProgressInterval)
	}
	if len(ps) == 0 || ps[len(ps)-1].Progress != n {
		t.Errorf("the last progress event is %+v, want %d of %d", ps[len(ps)-1:], n, n)
	}
}

// TestElicitationsCappedPerCall: a call whose server asks 300 questions at
// once puts at most MaxElicitationsPerCall to its user; the rest are
// declined, saying why, and the user is warned once.
func TestElicitationsCappedPerCall(t *testing.T) {
	t.Parallel()
	const asks = 300
	srv := mcpserver.NewMCPServer("asker", "1.0.0", mcpserver.WithToolCapabilities(false), mcpserver.WithElicitation())
	var mu sync.Mutex
	declined, reasons := 0, map[string]bool{}
	srv.AddTool(mcp.NewTool("ask"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var wg sync.WaitGroup
		for range asks {
			wg.Go(func() {
				req := mcp.ElicitationRequest{}
				req.Params.Message = "name?"
				req.Params.RequestedSchema = map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}
				res, err := srv.RequestElicitation(ctx, req)
				if err != nil || res.Action != mcp.ElicitationResponseActionDecline {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				declined++
				if res.Meta != nil {
					reason, _ := res.Meta.AdditionalFields["reason"].(string)
					reasons[reason] = true
				}
			})
		}
		wg.Wait()
		return mcp.NewToolResultText("asked"), nil
	})
	g := pipeGateway(t, srv)
	u := &userStream{answer: func(tools.Question) tools.Answer {
		return tools.Answer{Action: tools.ElicitAccept, Content: map[string]any{"name": "Ada"}}
	}}
	if res := run(t, g, u, "ask", nil); res.IsError {
		t.Fatalf("result %+v", res)
	}
	if len(u.asked) != session.MaxElicitationsPerCall {
		t.Errorf("the user was asked %d questions, want the cap, %d", len(u.asked), session.MaxElicitationsPerCall)
	}
	if declined != asks-session.MaxElicitationsPerCall {
		t.Errorf("%d questions declined, want %d", declined, asks-session.MaxElicitationsPerCall)
	}
	wantReason := "more than 10 questions in one call"
	if len(reasons) != 1 || !strings.Contains(strings.Join(slices.Collect(maps.Keys(reasons)), ""), wantReason) {
		t.Errorf("decline reasons %v, want one saying %q", reasons, wantReason)
	}
	warnings := 0
	for _, ev := range u.events {
		if ev.Type == tools.EventWarning {
			warnings++
		}
	}
	if warnings != 1 {
		t.Errorf("%d warnings, want 1: %+v", warnings, u.events)
	}
}
