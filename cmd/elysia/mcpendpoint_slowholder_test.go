package main

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/store"
)

// TestPostgresReplicasMCPResumeSlowHolder freezes replica A (SIGSTOP)
// while it runs a call whose client dropped its connection: the client's
// resume on replica B gets 503 with Retry-After (A keeps its liveness
// lease), not 404 "its replica is gone"; the call ends upstream
// meanwhile, and once A runs again the client's next resume on B gets the
// answer. The tool ran once.
func TestPostgresReplicasMCPResumeSlowHolder(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	up := newSlowUpstream(t)
	a := startService(t, serveOptions{Config: up.config(), Args: []string{"--db", dsn}})
	b := startService(t, serveOptions{Config: up.config(), Args: []string{"--db", dsn}})
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()

	s := openWire(t, a.URL, mcp.ProtocolVersion20251125)
	dropped := wireEvents(t, s.callTool(t, ctx, 1, "up__slow", map[string]any{"ms": 2000}), func(wireEvent) bool { return true })
	if len(dropped) != 1 || dropped[0].id == "" {
		t.Fatalf("the call's stream began with %v, want its priming event", dropped)
	}
	testenv.WaitFor(t, 10*time.Second, "the call to start upstream", func() bool { return up.started.Load() == 1 })
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	cont := func() { _ = a.cmd.Process.Signal(syscall.SIGCONT) }
	t.Cleanup(cont) // before the harness stops A

	onB := s.on(b.URL)
	res := onB.resume(t, ctx, dropped[0].id)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Fatalf("a resume on B while A is frozen: %d (Retry-After %q), want 503 with Retry-After", res.StatusCode, res.Header.Get("Retry-After"))
	}
	testenv.WaitFor(t, 10*time.Second, "the call to end upstream while A is frozen", func() bool { return up.finished.Load() == 1 })
	cont()

	var rest []wireEvent
	testenv.WaitFor(t, 30*time.Second, "a resume on B to get the answer once A runs again", func() bool {
		res := onB.resume(t, ctx, dropped[0].id)
		if res.StatusCode == http.StatusServiceUnavailable {
			_ = res.Body.Close()
			return false
		}
		rest = wireEvents(t, res, nil)
		return true
	})
	if got := outcome(rest); got != "result: slept" {
		t.Errorf("resumed on B once A ran again: %s, want the call's result", got)
	}
	if s, f, c := up.started.Load(), up.finished.Load(), up.cancelled.Load(); s != 1 || f != 1 || c != 0 {
		t.Errorf("upstream: %d calls started, %d finished, %d cancelled; want 1, 1, 0", s, f, c)
	}
}

// TestReplicaLeases: a replica's liveness lease is live until its time to
// live has passed since its last renewal, or until it is dropped, on
// PostgreSQL and on SQLite.
func TestReplicaLeases(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, dsn string }{
		{"sqlite", filepath.Join(t.TempDir(), "elysia.db")},
		{"postgres", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dsn := tt.dsn
			if dsn == "" {
				dsn = testenv.PostgresDSN(t)
			}
			st, err := store.Open(t.Context(), dsn, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			ctx := t.Context()
			live := func() []string {
				t.Helper()
				tags, err := st.LiveReplicas(ctx)
				if err != nil {
					t.Fatal(err)
				}
				slices.Sort(tags)
				return tags
			}
			if err := st.RenewReplica(ctx, "a", time.Minute); err != nil {
				t.Fatal(err)
			}
			if err := st.RenewReplica(ctx, "b", time.Second); err != nil {
				t.Fatal(err)
			}
			if got := live(); !slices.Equal(got, []string{"a", "b"}) {
				t.Errorf("live replicas %v, want a and b", got)
			}
			testenv.WaitFor(t, 10*time.Second, "b's lease to expire", func() bool { return slices.Equal(live(), []string{"a"}) })
			if err := st.RenewReplica(ctx, "b", time.Minute); err != nil {
				t.Fatal(err)
			}
			if err := st.DropReplica(ctx, "a"); err != nil {
				t.Fatal(err)
			}
			if err := st.DropReplica(ctx, "nobody"); err != nil {
				t.Errorf("dropping a lease nobody holds: %v", err)
			}
			if got := live(); !slices.Equal(got, []string{"b"}) {
				t.Errorf("live replicas after a dropped its lease and b renewed it: %v, want b", got)
			}
		})
	}
}
