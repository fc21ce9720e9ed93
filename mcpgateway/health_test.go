package mcpgateway

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
)

func TestHealthPingRetiresADeadSession(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p, g := newInProcess(t, &Options{HealthInterval: 10 * time.Second})
		if _, err := g.List(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(25 * time.Second)
		synctest.Wait()
		p.mu.Lock()
		pings := p.pings
		p.failPing = true
		p.mu.Unlock()
		if pings != 3 {
			t.Errorf("pings after 25s = %d, want 2 plus the initial listing", pings)
		}
		if st := g.Status().State; st != session.StateConnected {
			t.Fatalf("state with answered pings = %s, want connected", st)
		}

		time.Sleep(10 * time.Second)
		synctest.Wait()
		st := g.Status()
		if st.State != session.StateIdle || st.LastError == "" {
			t.Fatalf("after a failed ping: %+v, want idle with the error", st)
		}
		p.mu.Lock()
		p.failPing = false
		p.mu.Unlock()
		dials := p.dialCount()
		if _, err := g.Execute(t.Context(), "echo", map[string]any{"message": "hi"}); err != nil {
			t.Fatal(err)
		}
		if p.dialCount() != dials+1 {
			t.Errorf("the next call did not reconnect")
		}
		_ = g.Close()
	})
}

func TestNoHealthPingByDefault(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p, g := newInProcess(t, nil)
		if err := g.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.pings != 0 {
			t.Errorf("pings = %d, want none", p.pings)
		}
		_ = g.Close()
	})
}
