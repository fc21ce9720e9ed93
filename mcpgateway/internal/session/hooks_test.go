package session

import (
	"context"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// upCall is one call of OnSessionUp.
type upCall struct {
	s     *Session
	first bool
}

// TestSessionHooks: OnSessionUp is told of every session connected, the
// first one as such, and OnSessionDown of every published session that
// died, after it was retired; Close waits for a hook still running and
// ends its ctx, and no hook is told of the sessions Close ends.
func TestSessionHooks(t *testing.T) {
	t.Parallel()
	cfg := mcpconfig.ServerConfig{Name: "todo", Transport: mcpconfig.TransportStdio, Command: testenv.TodoMCP(t), Enabled: true,
		Env: map[string]string{"TODO_DB": t.TempDir() + "/todo.db"}, ConnectTimeout: 15 * time.Second, CallTimeout: 5 * time.Second}
	ups := make(chan upCall, 8)
	downs := make(chan *Session, 8)
	blockDown := make(chan struct{}) // closed: OnSessionDown waits for its ctx
	hookEnded := make(chan struct{}, 1)
	var c *Conn
	o := Options{CloseGrace: time.Second, CrashLoopDeaths: 5, CrashLoopWindow: time.Minute, CrashBackoff: time.Minute,
		OnSessionUp: func(_ context.Context, s *Session, first bool) { ups <- upCall{s, first} },
		OnSessionDown: func(ctx context.Context, s *Session) {
			if c.Current() == s {
				t.Error("OnSessionDown called with the session still published")
			}
			downs <- s
			select {
			case <-blockDown:
				<-ctx.Done()
				hookEnded <- struct{}{}
			default:
			}
		}}
	c = New(cfg, o, slog.New(slog.DiscardHandler), func(s string) string { return s })
	closed := false
	t.Cleanup(func() {
		if !closed {
			c.Close()
		}
	})

	s1 := connectAndAwaitUp(t, c, ups, true)
	killAndAwaitDown(t, s1, downs)
	select {
	case u := <-ups:
		t.Fatalf("a session came up (%p) without a call: the Conn itself stays lazy", u.s)
	default:
	}
	s2 := connectAndAwaitUp(t, c, ups, false)
	if s2 == s1 {
		t.Fatal("the dead session was used again")
	}

	close(blockDown)
	killAndAwaitDown(t, s2, downs)
	c.Close()
	closed = true
	select {
	case <-hookEnded:
	default:
		t.Fatal("Close returned before the running OnSessionDown, whose ctx it ends")
	}
	if len(ups) > 0 || len(downs) > 0 {
		t.Errorf("hooks called after Close: %d up, %d down", len(ups), len(downs))
	}
}

// connectAndAwaitUp connects c and waits for OnSessionUp of the session.
func connectAndAwaitUp(t *testing.T, c *Conn, ups <-chan upCall, first bool) *Session {
	t.Helper()
	s, err := c.Session(t.Context())
	if err != nil {
		t.Fatalf("Session: %v", err)
	}
	select {
	case u := <-ups:
		if u.s != s || u.first != first {
			t.Fatalf("OnSessionUp(%p, first %v), want (%p, first %v)", u.s, u.first, s, first)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no OnSessionUp after a connect")
	}
	return s
}

// killAndAwaitDown kills s's child and waits for OnSessionDown of s.
func killAndAwaitDown(t *testing.T, s *Session, downs <-chan *Session) {
	t.Helper()
	if err := syscall.Kill(s.pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-downs:
		if d != s {
			t.Fatalf("OnSessionDown(%p), want the killed session %p", d, s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no OnSessionDown after the child was killed")
	}
}
