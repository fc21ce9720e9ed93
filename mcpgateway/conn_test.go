package mcpgateway

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
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
			s.MarkDead(errors.New("connection lost"))
			g.shared.conns[0].Retire(s)
		}
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
		p.mu.Lock()
		sessions := append([]*session.Session(nil), p.sessions...)
		p.mu.Unlock()
		if len(sessions) != 50 {
			t.Fatalf("dialled %d sessions, want 50", len(sessions))
		}
		for i, s := range sessions {
			select {
			case <-s.Done():
			default:
				t.Errorf("session %d was not closed by Close", i)
			}
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
		s.MarkDead(errors.New("connection lost"))
		g.shared.conns[0].Retire(s)
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

// TestCloseDuringDial closes the gateway while a stdio session is being
// dialled: the child has started and the dial is held (in OnProcessStart)
// before it has set up the session's client. Close must not race the dial
// setting the session up (run with -race), must end the dial, and must
// leave no child and no goroutine behind.
func TestCloseDuringDial(t *testing.T) {
	t.Parallel()
	var sp spawns
	started := make(chan int, 1)
	release := make(chan struct{})
	hold := func(pid int) {
		sp.add(pid)
		started <- pid
		select { // held until the child is gone; bounded in case it never goes
		case <-release:
		case <-time.After(30 * time.Second):
		}
	}
	cfg := mcpconfig.ServerConfig{Name: "silent", Transport: mcpconfig.TransportStdio, Command: "sleep", Args: []string{"60"},
		Enabled: true, ConnectTimeout: time.Minute}
	g := New(cfg, &Options{CloseGrace: time.Second, OnProcessStart: hold})
	dialled := make(chan error, 1)
	go func() { dialled <- g.Connect(context.Background()) }()
	pid := <-started
	closed := make(chan struct{})
	go func() { _ = g.Close(); close(closed) }()
	testenv.WaitFor(t, 10*time.Second, "Close to end the child", func() bool { return processGone(pid) })
	close(release)
	select {
	case err := <-dialled:
		if !errors.Is(err, session.ErrClosed) {
			t.Errorf("Connect after Close = %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the dial outlived Close")
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	for _, pid := range sp.all() {
		if !processGone(pid) {
			t.Errorf("child %d outlived Close", pid)
		}
	}
}
