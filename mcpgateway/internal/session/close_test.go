package session

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// slowClose is a transport whose Close takes grace, as a stdio child that
// ignores its closed stdin does.
type slowClose struct {
	mcptransport.Interface
	grace time.Duration
}

func (s slowClose) Close() error {
	time.Sleep(s.grace)
	return s.Interface.Close()
}

// slowConn returns a Conn whose sessions are in-process servers that take
// grace to close, as long as CloseGrace.
func slowConn(t *testing.T, grace time.Duration) *Conn {
	t.Helper()
	cfg := mcpconfig.ServerConfig{Name: "slow", Transport: mcpconfig.TransportStdio, Command: "unused", Enabled: true}
	o := Options{CloseGrace: grace, CrashLoopDeaths: 3, CrashLoopWindow: time.Minute, CrashBackoff: time.Minute}
	c := New(cfg, o, slog.New(slog.DiscardHandler), func(s string) string { return s })
	c.SetDialer(func(hsCtx context.Context) (*Session, error) {
		srv := mcpserver.NewMCPServer("slow", "1.0.0", mcpserver.WithToolCapabilities(false))
		srv.AddTool(mcp.NewTool("noop"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
		return c.DialTransport(hsCtx, "in-process", slowClose{mcptransport.NewInProcessTransport(srv), grace})
	})
	return c
}

// TestCloseWhileWatcherCloses: a session dies and its watcher starts
// closing it, which the transport holds up for CloseGrace; Close, called
// meanwhile, waits for that close instead of blocking on it where
// synctest's clock cannot see (it used to wait on the sync.Once the
// watcher held, so the clock never moved and the test hung), and every
// close returns within about one CloseGrace with the session closed.
func TestCloseWhileWatcherCloses(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const grace = 2 * time.Second
		c := slowConn(t, grace)
		s, err := c.Session(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		s.MarkDead(errors.New("connection lost"))
		synctest.Wait() // the watcher is in s's close, held up by the transport
		start := time.Now()
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(c.Close)
		}
		wg.Go(func() { c.closeSession(s) })
		wg.Wait()
		if took := time.Since(start); took > 2*grace {
			t.Errorf("Close took %v, want at most about CloseGrace %v", took, grace)
		}
		select {
		case <-s.Done():
		default:
			t.Error("the session is not closed after Close")
		}
	})
}

// TestCloseRacesSessionDeath closes Conns whose sessions die at the same
// moment, many times: whichever of the watcher and Close comes first, every
// Close returns and the session is closed.
func TestCloseRacesSessionDeath(t *testing.T) {
	t.Parallel()
	for range 50 {
		synctest.Test(t, func(t *testing.T) {
			const grace = time.Second
			c := slowConn(t, grace)
			s, err := c.Session(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			wg.Go(func() { s.MarkDead(errors.New("connection lost")) })
			wg.Go(c.Close)
			wg.Go(c.Close)
			wg.Wait()
			select {
			case <-s.Done():
			default:
				t.Error("the session is not closed after Close")
			}
		})
	}
}
