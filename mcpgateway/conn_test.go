package mcpgateway

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/elysia-go/elysia/tools"
)

// TestCloseClosesRetiredSessions retires sessions the way a failed call does
// (marked dead and dropped at once, before the watcher runs), then closes
// the gateway: every session it ever opened must be closed by Close, however
// the watcher's select went.
func TestCloseClosesRetiredSessions(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p, g := newInProcess(t, &Options{CrashLoopDeaths: 1000})
		ctx := t.Context()
		for i := range 50 {
			if _, err := g.Execute(ctx, "lookup", nil); err != nil {
				t.Fatalf("execute %d: %v", i, err)
			}
			s := currentSession(g)
			s.markDead(errors.New("connection lost"))
			g.conn.retire(s)
		}
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
		p.mu.Lock()
		sessions := append([]*session(nil), p.sessions...)
		p.mu.Unlock()
		if len(sessions) != 50 {
			t.Fatalf("dialled %d sessions, want 50", len(sessions))
		}
		for i, s := range sessions {
			select {
			case <-s.closed:
			default:
				t.Errorf("session %d was not closed by Close", i)
			}
		}
		if n := len(g.conn.open); n != 0 {
			t.Errorf("%d sessions still registered after Close", n)
		}
	})
}

// TestCloseEndsRetiredStdioChild retires a live stdio session (its child
// still running) and closes the gateway at once: Close must end the child
// rather than wait for its stderr forever.
func TestCloseEndsRetiredStdioChild(t *testing.T) {
	t.Parallel()
	for i := range 5 {
		var sp spawns
		g := New(todoStdio(t), &Options{CloseGrace: time.Second, OnProcessStart: sp.add})
		if _, err := g.Run(t.Context(), tools.Call{Args: map[string]any{"action": "list"}}, tools.Discard); err != nil {
			t.Fatal(err)
		}
		s := currentSession(g)
		s.markDead(errors.New("connection lost"))
		g.conn.retire(s)
		closed := make(chan struct{})
		go func() { _ = g.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(20 * time.Second):
			t.Fatalf("run %d: Close did not return", i)
		}
		for _, pid := range sp.all() {
			if !processGone(pid) {
				t.Errorf("run %d: child %d outlived Close", i, pid)
			}
		}
	}
}
