package mcpgateway

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/tools"
)

func TestDrainLetsInFlightCallsFinish(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t)
	g := newGateway(t, f.config("fake"), nil)
	ctx := t.Context()

	type outcome struct {
		res tools.Result
		err error
	}
	inflight := make(chan outcome, 1)
	go func() {
		res, err := g.Run(ctx, tools.Call{Args: map[string]any{"action": "execute", "tool_name": "hold"}}, tools.Discard)
		inflight <- outcome{res, err}
	}()
	<-f.held

	drained := make(chan error, 1)
	go func() { drained <- g.Drain(ctx) }()
	testenv.WaitFor(t, 5*time.Second, "Drain to start", func() bool { ok, _ := g.Available(nil); return !ok })
	// Drain must not return while the call runs; a new call fails at once.
	for range 3 {
		_, err := g.Execute(ctx, "echo", map[string]any{"message": "late"})
		if !errors.Is(err, errDraining) || !errors.Is(err, session.ErrClosed) || !strings.Contains(err.Error(), "being replaced or removed") {
			t.Fatalf("Execute during Drain = %v, want ErrDraining", err)
		}
	}
	if _, err := g.List(ctx); !errors.Is(err, errDraining) {
		t.Errorf("List during Drain = %v, want ErrDraining", err)
	}
	res, err := g.Run(ctx, tools.Call{Args: map[string]any{"action": "list"}}, tools.Discard)
	if err != nil || !res.IsError || !strings.Contains(res.Error, "being replaced or removed") {
		t.Errorf("Run during Drain = %v %+v, want a self-healing error", err, res)
	}
	if ok, reason := g.Available(nil); ok || !strings.Contains(reason, "being replaced or removed") {
		t.Errorf("Available during Drain = %v %q", ok, reason)
	}
	select {
	case err := <-drained:
		t.Fatalf("Drain returned %v while a call was in flight", err)
	default:
	}

	close(f.release)
	if got := <-inflight; got.err != nil || got.res.IsError || got.res.LLMText != "released" {
		t.Fatalf("in-flight call = %v %+v, want success", got.err, got.res)
	}
	if err := <-drained; err != nil {
		t.Fatalf("Drain = %v", err)
	}
	if err := g.Drain(ctx); err != nil {
		t.Errorf("second Drain = %v", err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if st := g.Status(); st.State != session.StateClosed {
		t.Errorf("state after Close = %s", st.State)
	}
}

func TestDrainStopsAtDeadline(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t)
	g := newGateway(t, f.config("fake"), nil)
	done := make(chan error, 1)
	go func() {
		_, err := g.Execute(t.Context(), "hold", nil)
		done <- err
	}()
	<-f.held
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := g.Drain(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Drain = %v, want DeadlineExceeded", err)
	}
	// Close after a timed-out Drain ends the call still running.
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, session.ErrClosed) {
		t.Errorf("call after Close = %v, want ErrClosed", err)
	}
}
