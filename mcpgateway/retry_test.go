package mcpgateway

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

func TestRetryOnlyReadOnlyOrIdempotentTools(t *testing.T) {
	t.Parallel()
	tests := []struct {
		tool      string
		wantRetry bool
	}{
		{"lookup", true}, // readOnlyHint
		{"put", true},    // idempotentHint
		{"append", false},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p, g := newInProcess(t, nil)
				if _, err := g.List(t.Context()); err != nil {
					t.Fatal(err)
				}
				dials := p.dialCount()
				p.loseNext(1)
				cr, err := g.Execute(t.Context(), tt.tool, nil)
				if tt.wantRetry {
					if err != nil || cr.IsError {
						t.Fatalf("Execute = %v %+v, want success after one retry", err, cr)
					}
					if got := p.dialCount(); got != dials+1 {
						t.Errorf("dials = %d, want %d (a new session for the retry)", got, dials+1)
					}
					if got := p.runs(tt.tool); got != 2 {
						t.Errorf("handler ran %d times, want 2", got)
					}
				} else {
					if err == nil || !strings.Contains(err.Error(), "connection reset") {
						t.Fatalf("Execute = %v, want the transport error", err)
					}
					if got := p.runs(tt.tool); got != 1 {
						t.Errorf("handler ran %d times, want 1 (no retry)", got)
					}
				}
				if st := g.Status(); st.Calls != 1 {
					t.Errorf("calls = %d, want 1: a retry is part of one execute", st.Calls)
				}
				_ = g.Close()
			})
		})
	}
}

func TestRetryHappensOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p, g := newInProcess(t, nil)
		p.loseNext(5)
		_, err := g.Execute(t.Context(), "lookup", nil)
		if err == nil || errors.Is(err, ErrCircuitOpen) {
			t.Fatalf("Execute = %v, want the transport error", err)
		}
		if got := p.runs("lookup"); got != 2 {
			t.Errorf("handler ran %d times, want 2", got)
		}
		_ = g.Close()
	})
}

func TestTodoRetryAnnotations(t *testing.T) {
	t.Parallel()
	cfg := todoStdio(t)
	cfg.Args = []string{"--fault-tools"}
	var spawns atomic.Int32
	g := newGateway(t, cfg, &Options{OnProcessStart: func(int) { spawns.Add(1) }})
	if _, err := g.List(t.Context()); err != nil {
		t.Fatal(err)
	}
	retry := g.shared.cached().retry
	for tool, want := range map[string]bool{"list_todos": true, "search_todos": true, "create_todo": false, "delete_todo": true, "fault": false} {
		if retry[tool] != want {
			t.Errorf("retry[%s] = %v, want %v", tool, retry[tool], want)
		}
	}
	// A crash in the middle of a tool that is not read-only is not retried.
	if _, err := g.Execute(t.Context(), "fault", map[string]any{"mode": "crash"}); err == nil {
		t.Fatal("fault crash succeeded")
	}
	if n := spawns.Load(); n != 1 {
		t.Errorf("spawned %d processes after a crash of a non-idempotent tool, want 1 (no retry)", n)
	}
	if _, err := g.Execute(t.Context(), "list_todos", nil); err != nil {
		t.Fatalf("list_todos after the crash: %v", err)
	}
}
