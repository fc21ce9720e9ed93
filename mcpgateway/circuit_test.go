package mcpgateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

// inProcess connects a gateway to an in-process MCP server without any
// network, so that tests can run it inside a testing/synctest bubble. While
// down, connecting fails like a server that is not listening.
type inProcess struct {
	mu    sync.Mutex
	down  bool
	dials int
	// lose is how many of the next tools/call requests are lost on the way
	// back, as when a connection resets mid-call.
	lose int
	// ran counts the tool handlers run, by tool.
	ran map[string]int
	// pings counts pings and tools/list requests (the health probe on the
	// modern protocol); while failPing, they fail.
	pings    int
	failPing bool
	// listGate, when set, holds every tools/list until it is closed or the
	// request's ctx ends; hangList holds them until the ctx ends.
	listGate chan struct{}
	hangList bool
	// srv is the server of the latest session; sessions lists every
	// session dialled, in order.
	srv      *mcpserver.MCPServer
	sessions []*session.Session
}

func newInProcess(t *testing.T, opts *Options) (*inProcess, *Gateway) {
	t.Helper()
	p := &inProcess{ran: map[string]int{}}
	cfg := mcpconfig.ServerConfig{Name: "todo", Transport: mcpconfig.TransportHTTP, URL: "http://in-process/mcp", Enabled: true,
		ConnectTimeout: 5 * time.Second, CallTimeout: 5 * time.Second}
	g := New(cfg, opts)
	g.shared.conns[0].SetDialer(p.dial(g.shared.conns[0]))
	t.Cleanup(func() { _ = g.Close() })
	return p, g
}

// server returns a fresh in-process server: one per session, because
// mcp-go names in-process sessions after time.Now, which stands still in a
// synctest bubble.
func (p *inProcess) server() *mcpserver.MCPServer {
	srv := mcpserver.NewMCPServer("fake", "1.0.0", mcpserver.WithToolCapabilities(true))
	count := func(tool string, res *mcp.CallToolResult) mcpserver.ToolHandlerFunc {
		return func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			p.mu.Lock()
			p.ran[tool]++
			p.mu.Unlock()
			return res, nil
		}
	}
	srv.AddTool(mcp.NewTool("lookup", mcp.WithReadOnlyHintAnnotation(true)), count("lookup", mcp.NewToolResultText("found")))
	srv.AddTool(mcp.NewTool("put", mcp.WithIdempotentHintAnnotation(true), mcp.WithReadOnlyHintAnnotation(false)), count("put", mcp.NewToolResultText("put")))
	srv.AddTool(mcp.NewTool("append", mcp.WithReadOnlyHintAnnotation(false), mcp.WithIdempotentHintAnnotation(false)), count("append", mcp.NewToolResultText("appended")))
	srv.AddTool(mcp.NewTool("echo", mcp.WithString("message", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("Echo: " + req.GetString("message", "")), nil
		})
	srv.AddTool(mcp.NewTool("hang"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	srv.AddTool(mcp.NewTool("fail"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultError("it broke"), nil
	})
	return srv
}

func (p *inProcess) setDown(down bool) {
	p.mu.Lock()
	p.down = down
	p.mu.Unlock()
}

func (p *inProcess) dialCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dials
}

func (p *inProcess) dial(c *session.Conn) func(context.Context) (*session.Session, error) {
	return func(hsCtx context.Context) (*session.Session, error) {
		p.mu.Lock()
		p.dials++
		down := p.down
		p.mu.Unlock()
		if down {
			return nil, errors.New("dial tcp: connection refused")
		}
		srv := p.server()
		t := &lossyTransport{InProcessTransport: mcptransport.NewInProcessTransport(srv), p: p}
		s, err := c.DialTransport(hsCtx, "in-process", t)
		if err != nil {
			return nil, err
		}
		p.mu.Lock()
		p.srv = srv
		p.sessions = append(p.sessions, s)
		p.mu.Unlock()
		return s, nil
	}
}

// lossyTransport loses tools/call answers while p.lose > 0.
type lossyTransport struct {
	*mcptransport.InProcessTransport
	p *inProcess
}

func (l *lossyTransport) SendRequest(ctx context.Context, req mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
	l.p.mu.Lock()
	if req.Method == string(mcp.MethodPing) || req.Method == string(mcp.MethodToolsList) {
		l.p.pings++
		if l.p.failPing {
			l.p.mu.Unlock()
			return nil, errors.New("read: connection reset by peer")
		}
	}
	gate, hang := l.p.listGate, l.p.hangList
	l.p.mu.Unlock()
	if req.Method == string(mcp.MethodToolsList) && (gate != nil || hang) {
		select {
		case <-gate: // a nil gate never opens: the list hangs
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	resp, err := l.InProcessTransport.SendRequest(ctx, req)
	l.p.mu.Lock()
	defer l.p.mu.Unlock()
	if req.Method == string(mcp.MethodToolsCall) && l.p.lose > 0 {
		l.p.lose--
		return nil, errors.New("read: connection reset by peer")
	}
	return resp, err
}

func (p *inProcess) loseNext(n int) {
	p.mu.Lock()
	p.lose = n
	p.mu.Unlock()
}

func (p *inProcess) runs(tool string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ran[tool]
}

// killSession makes the current session die, as a crashed server would.
func killSession(g *Gateway) {
	s := currentSession(g)
	if s != nil {
		s.MarkDead(errors.New("connection lost"))
	}
}

func TestCircuitOpensAfterTransportFailuresOnly(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p, g := newInProcess(t, &Options{CrashLoopDeaths: 100})
		ctx := t.Context()
		if _, err := g.Execute(ctx, "echo", map[string]any{"message": "hi"}); err != nil {
			t.Fatal(err)
		}
		// Failures of the tool or of the model never open the circuit.
		for range 6 {
			if cr, err := g.Execute(ctx, "fail", nil); err != nil || !cr.IsError {
				t.Fatalf("fail = %v %+v", err, cr)
			}
			if _, err := g.Execute(ctx, "ecko", nil); !errors.Is(err, tools.ErrUnknownTool) {
				t.Fatalf("unknown tool = %v", err)
			}
			if _, err := g.Execute(ctx, "echo", nil); !errors.Is(err, tools.ErrInvalidArguments) {
				t.Fatalf("bad inputs = %v", err)
			}
		}
		if cs := g.Status().Circuit; cs.State != CircuitClosed {
			t.Fatalf("circuit after isError and schema failures = %+v, want closed", cs)
		}

		p.setDown(true)
		killSession(g)
		synctest.Wait()
		for i := range 5 {
			_, err := g.Execute(ctx, "echo", map[string]any{"message": "hi"})
			if err == nil || errors.Is(err, ErrCircuitOpen) {
				t.Fatalf("failure %d = %v, want a connect error", i+1, err)
			}
		}
		st := g.Status()
		wantRetry := time.Now().Add(30 * time.Second)
		if st.Circuit.State != CircuitOpen || st.Circuit.RetryAt == nil || !st.Circuit.RetryAt.Equal(wantRetry) {
			t.Fatalf("circuit after 5 failures = %+v, want open until %v", st.Circuit, wantRetry)
		}

		dials := p.dialCount()
		_, err := g.Execute(ctx, "echo", map[string]any{"message": "hi"})
		want := fmt.Sprintf(`server "todo" is unavailable: circuit open after 5 consecutive failures; retrying at %s (in 30s)`,
			wantRetry.Format(time.TimeOnly))
		if err == nil || err.Error() != want || !errors.Is(err, ErrCircuitOpen) || !errors.Is(err, session.ErrUnavailable) {
			t.Fatalf("execute while open = %v\nwant %s", err, want)
		}
		if p.dialCount() != dials {
			t.Errorf("execute while open dialled the server")
		}
		time.Sleep(2 * time.Second)
		if ok, reason := g.Available(nil); ok || !strings.Contains(reason, "circuit open after 5 consecutive failures") || !strings.Contains(reason, "(in 28s)") {
			t.Errorf("Available while open = %v %q", ok, reason)
		}
		res, err := g.Run(ctx, tools.Call{Args: map[string]any{"action": "list"}}, tools.Discard)
		if err != nil || res.IsError || len(res.Objects) != 6 {
			t.Fatalf("list while open = %v %+v, want the cached tools", err, res)
		}
		if c, _ := res.Metadata["circuit"].(map[string]any); c["state"] != CircuitOpen || c["retry_at"] == nil {
			t.Errorf("list metadata = %v, want the open circuit", res.Metadata)
		}
		res, err = g.Run(ctx, tools.Call{Args: map[string]any{"action": "execute", "tool_name": "echo",
			"tool_inputs": map[string]any{"message": "hi"}}}, tools.Discard)
		if err != nil || !res.IsError || !strings.Contains(res.Error, "circuit open") {
			t.Errorf("Run execute while open = %v %+v", err, res)
		}

		// After the open period one trial goes through; failing, it opens
		// the circuit again.
		time.Sleep(28*time.Second + time.Millisecond)
		if ok, _ := g.Available(nil); !ok || g.Status().Circuit.State != CircuitHalfOpen {
			t.Fatalf("after 30s: available %v, circuit %+v, want half-open", ok, g.Status().Circuit)
		}
		if _, err := g.Execute(ctx, "echo", map[string]any{"message": "hi"}); err == nil || errors.Is(err, ErrCircuitOpen) {
			t.Fatalf("trial call = %v, want the connect error", err)
		}
		if cs := g.Status().Circuit; cs.State != CircuitOpen {
			t.Fatalf("after a failed trial: %+v, want open", cs)
		}

		time.Sleep(30*time.Second + time.Millisecond)
		p.setDown(false)
		if cr, err := g.Execute(ctx, "echo", map[string]any{"message": "back"}); err != nil || cr.Text() != "Echo: back" {
			t.Fatalf("trial after recovery = %v %+v", err, cr)
		}
		if cs := g.Status().Circuit; cs.State != CircuitClosed || cs.RetryAt != nil {
			t.Errorf("after a good trial: %+v, want closed", cs)
		}
		_ = g.Close()
	})
}

func TestCircuitOptions(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p, g := newInProcess(t, &Options{CircuitFailures: 2, CircuitOpenFor: time.Second, CrashLoopDeaths: 100})
		p.setDown(true)
		for range 2 {
			_, _ = g.Execute(t.Context(), "echo", map[string]any{"message": "x"})
		}
		_, err := g.Execute(t.Context(), "echo", map[string]any{"message": "x"})
		if !errors.Is(err, ErrCircuitOpen) || !strings.Contains(err.Error(), "after 2 consecutive failures") || !strings.Contains(err.Error(), "(in 1s)") {
			t.Fatalf("execute = %v", err)
		}
		time.Sleep(time.Second + time.Millisecond)
		if st := g.Status().Circuit.State; st != CircuitHalfOpen {
			t.Errorf("circuit after 1s = %s", st)
		}
		_ = g.Close()
	})
}

func TestListAnswersFromCacheWhenServerIsDown(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p, g := newInProcess(t, nil)
		ctx := t.Context()
		list := tools.Call{Args: map[string]any{"action": "list"}}
		if res, err := g.Run(ctx, list, tools.Discard); err != nil || res.IsError || res.Metadata["stale"] != nil {
			t.Fatalf("first list = %v %+v", err, res)
		}
		p.setDown(true)
		killSession(g)
		synctest.Wait()
		res, err := g.Run(ctx, list, tools.Discard)
		if err != nil || res.IsError || len(res.Objects) != 6 {
			t.Fatalf("list while down = %v %+v, want the cached tools", err, res)
		}
		lastErr, _ := res.Metadata["last_error"].(string)
		if res.Metadata["state"] != string(g.Status().State) || res.Metadata["stale"] != true || !strings.Contains(lastErr, "connection refused") {
			t.Errorf("metadata = %v, want the server's state %q, stale and the connect error", res.Metadata, g.Status().State)
		}
		// The public List has no metadata to carry staleness: it fails.
		if _, err := g.List(ctx); err == nil {
			t.Errorf("List while down succeeded")
		}
		_ = g.Close()
	})
}

func TestListWithoutCacheFailsWhenServerIsDown(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p, g := newInProcess(t, nil)
		p.setDown(true)
		res, err := g.Run(t.Context(), tools.Call{Args: map[string]any{"action": "list"}}, tools.Discard)
		if err != nil || !res.IsError || !strings.Contains(res.Error, "connection refused") {
			t.Errorf("list = %v %+v, want a self-healing error", err, res)
		}
		_ = g.Close()
	})
}
