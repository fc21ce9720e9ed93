package mcpgateway

import (
	"context"
	"errors"
	"fmt"
	"runtime"
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
)

// whoamiServer is an in-process server with a whoami tool that waits for
// gate (when not nil) before it answers.
func whoamiServer(gate <-chan struct{}) *mcpserver.MCPServer {
	srv := mcpserver.NewMCPServer("s", "1.0.0")
	srv.AddTool(mcp.NewTool("whoami"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if gate != nil {
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return mcp.NewToolResultText("ok"), nil
	})
	return srv
}

// perUserGateway is a per-user gateway whose users' sessions each dial a
// server of their own in process (made by newSrv); each user's conn is
// recorded in conns.
type perUserGateway struct {
	*Gateway
	mu    sync.Mutex
	conns []*session.Conn
}

func newPerUserGateway(newSrv func() *mcpserver.MCPServer, opts *Options, wrap func(mcptransport.Interface) mcptransport.Interface) *perUserGateway {
	p := &perUserGateway{Gateway: New(mcpconfig.ServerConfig{Name: "p", Transport: mcpconfig.TransportStdio, Command: "unused", Enabled: true, PerUser: true}, opts)}
	p.childDialer = func(c *session.Conn) func(context.Context) (*session.Session, error) {
		p.mu.Lock()
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		return dialInProcess(c, func() mcptransport.Interface {
			var tr mcptransport.Interface = mcptransport.NewInProcessTransport(newSrv())
			if wrap != nil {
				tr = wrap(tr)
			}
			return tr
		})
	}
	return p
}

// open returns how many users' sessions ever made are not closed.
func (p *perUserGateway) open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.conns {
		if c.Status().State != session.StateClosed {
			n++
		}
	}
	return n
}

// TestPerUserCloseRacesEviction has many users call a per-user server
// capped at two sessions, so that sessions are evicted all the time, and
// closes the gateway meanwhile: once Close returns, no user's session is
// open. Run with -race: the eviction's close used to start on g.wg after
// Close's Wait.
func TestPerUserCloseRacesEviction(t *testing.T) {
	t.Parallel()
	// More threads than cores: the OS deschedules one between child's
	// Unlock and its start of the eviction's close more often.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(16))
	srv := func() *mcpserver.MCPServer { return whoamiServer(nil) }
	for round := range 100 {
		g := newPerUserGateway(srv, &Options{MaxUsers: 2, CloseGrace: time.Second}, nil)
		var wg sync.WaitGroup
		started := make(chan struct{}, 64)
		for i := range 32 {
			wg.Go(func() {
				for j := 0; ; j++ {
					_, err := g.Execute(WithUser(t.Context(), fmt.Sprintf("u%d-%d", i, j)), "whoami", nil)
					if errors.Is(err, session.ErrClosed) {
						return
					}
					select {
					case started <- struct{}{}:
					default:
					}
				}
			})
		}
		for range 8 {
			<-started
		}
		_ = g.Close()
		if n := g.open(); n > 0 {
			t.Errorf("round %d: %d users' sessions still open after Close returned", round, n)
		}
		wg.Wait()
	}
}

// slowClose is a transport whose Close takes grace, as a stdio child that
// ignores its closed stdin and SIGTERM does.
type slowClose struct {
	mcptransport.Interface
	grace time.Duration
}

func (s slowClose) Close() error {
	time.Sleep(s.grace)
	return s.Interface.Close()
}

// TestPerUserSessionsCloseInParallel closes a gateway with ten users'
// sessions that each take CloseGrace to close: Close takes about one
// CloseGrace, not ten (synctest's clock).
func TestPerUserSessionsCloseInParallel(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const users, grace = 10, 2 * time.Second
		g := newPerUserGateway(func() *mcpserver.MCPServer { return whoamiServer(nil) }, &Options{CloseGrace: grace},
			func(tr mcptransport.Interface) mcptransport.Interface { return slowClose{tr, grace} })
		defer func() { _ = g.Close() }()
		for i := range users {
			if _, err := g.Execute(WithUser(t.Context(), fmt.Sprint("u", i)), "whoami", nil); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		_ = g.Close()
		if took := time.Since(start); took > 2*grace {
			t.Errorf("Close took %v with %d users' sessions of CloseGrace %v each, want about one CloseGrace", took, users, grace)
		}
		if n := g.open(); n > 0 {
			t.Errorf("%d users' sessions open after Close", n)
		}
	})
}

// TestPerUserBusySessionIsNeverEvicted fills a per-user server capped at
// two sessions with two calls in flight: a third user's call waits for one
// of them to end instead of closing it under its call, and when none ends
// within UserWait it is refused with ErrTooManyUsers, the two calls going
// on (synctest's clock).
func TestPerUserBusySessionIsNeverEvicted(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, wait time.Duration, end bool) (calls []error, carol error) {
		t.Helper()
		gate := make(chan struct{})
		g := newPerUserGateway(func() *mcpserver.MCPServer { return whoamiServer(gate) }, &Options{MaxUsers: 2, UserWait: wait}, nil)
		defer func() { _ = g.Close() }()
		calls = make([]error, 2)
		var wg sync.WaitGroup
		for i, user := range []string{"alice", "bob"} {
			wg.Go(func() { _, calls[i] = g.Execute(WithUser(t.Context(), user), "whoami", nil) })
			synctest.Wait()
		}
		done := make(chan error, 1)
		go func() {
			_, err := g.Execute(WithUser(t.Context(), "carol"), "whoami", nil)
			done <- err
		}()
		synctest.Wait()
		if n := g.Sessions(); n.Users != 2 || n.BusyUsers != 2 || n.Live != 2 {
			t.Errorf("Sessions = %+v, want 2 users' sessions, both live and busy", n)
		}
		if !end {
			carol = <-done
			close(gate)
		} else {
			select {
			case err := <-done:
				t.Fatalf("carol's call ended (%v) while both sessions were busy", err)
			default:
			}
			close(gate)
			carol = <-done
		}
		wg.Wait()
		return calls, carol
	}
	t.Run("waits", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			calls, carol := run(t, time.Minute, true)
			for i, err := range calls {
				if err != nil {
					t.Errorf("call %d: %v, want it to end well: its session is busy", i, err)
				}
			}
			if carol != nil {
				t.Errorf("carol: %v, want her call to run once a session went idle", carol)
			}
		})
	})
	t.Run("refused", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			calls, carol := run(t, 3*time.Second, false)
			for i, err := range calls {
				if err != nil {
					t.Errorf("call %d: %v, want it to end well: its session is busy", i, err)
				}
			}
			if !errors.Is(carol, errTooManyUsers) || !strings.Contains(carol.Error(), "try again") {
				t.Errorf("carol: %v, want ErrTooManyUsers saying to try again", carol)
			}
			if took := time.Since(start); took < 3*time.Second || took > 4*time.Second {
				t.Errorf("carol was refused after %v, want UserWait (3s)", took)
			}
		})
	})
}

// TestPerUserSessionsUnderPressure has 150 users call at once a per-user
// server capped at 100 sessions, each call taking a second: every call
// ends well (the last 50 users wait for a session to go idle), no more
// than 100 sessions are ever open, and none is closed under its call
// (synctest's clock).
func TestPerUserSessionsUnderPressure(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := func() *mcpserver.MCPServer {
			s := mcpserver.NewMCPServer("s", "1.0.0")
			s.AddTool(mcp.NewTool("whoami"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				time.Sleep(time.Second)
				return mcp.NewToolResultText("ok"), nil
			})
			return s
		}
		g := newPerUserGateway(srv, &Options{MaxUsers: 100}, nil)
		defer func() { _ = g.Close() }()
		var wg sync.WaitGroup
		var failed sync.Map
		for i := range 150 {
			user := fmt.Sprint("u", i)
			wg.Go(func() {
				if _, err := g.Execute(WithUser(t.Context(), user), "whoami", nil); err != nil {
					failed.Store(user, err)
				}
			})
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		most := 0
	watch:
		for {
			select {
			case <-done:
				break watch
			case <-time.After(100 * time.Millisecond):
				most = max(most, g.Sessions().Users)
			}
		}
		n := 0
		failed.Range(func(user, err any) bool {
			if n++; n <= 3 {
				t.Errorf("%s: %v", user, err)
			}
			return true
		})
		if n > 0 {
			t.Errorf("%d of 150 calls failed, want none", n)
		}
		if most > 100 {
			t.Errorf("%d users' sessions open at once, want at most MaxUsers (100)", most)
		}
		g.mu.Lock()
		made := len(g.conns)
		g.mu.Unlock()
		if made != 150 {
			t.Errorf("%d users' sessions made for 150 users, want 150: none closed under a call and made again", made)
		}
	})
}
