package mcpgateway

import (
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// stateRecorder is a goroutine-safe Observer and StateObserver that records
// every state it is told of.
type stateRecorder struct {
	mu     sync.Mutex // guards states
	states []session.State
}

var _ StateObserver = (*stateRecorder)(nil)

func (r *stateRecorder) ObserveCall(string, string, string, time.Duration) {}
func (r *stateRecorder) ObserveCircuit(string, string)                     {}

func (r *stateRecorder) ObserveState(server string, state session.State) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.states = append(r.states, state)
}

func (r *stateRecorder) seen() []session.State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.states)
}

// last returns the last state seen, or "" before any.
func (r *stateRecorder) last() session.State {
	s := r.seen()
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}

// TestStateObserverSeesProcessDeath checks that the death of a stdio child,
// which no call or reload is behind, reaches a StateObserver: connected,
// then idle once the gateway notices, with no call in between. Concurrent
// first callers and readers of Status change nothing: the observer is told
// each state once, in order.
func TestStateObserverSeesProcessDeath(t *testing.T) {
	t.Parallel()
	testenv.Integration(t)
	rec := &stateRecorder{}
	g := newGateway(t, todoStdio(t), &Options{Observer: rec})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := g.Execute(t.Context(), "list_todos", nil); err != nil {
				t.Error(err)
			}
			_ = g.Status()
		})
	}
	wg.Wait()
	testenv.WaitFor(t, 5*time.Second, "connected to be observed", func() bool { return rec.last() == session.StateConnected })
	before := len(rec.seen())

	pid := g.Status().PID
	if pid == 0 {
		t.Fatal("no pid in Status")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 5*time.Second, "the death to be observed", func() bool { return rec.last() == session.StateIdle })
	all := rec.seen()
	if got := all[before:]; !slices.Equal(got, []session.State{session.StateIdle}) {
		t.Errorf("states observed after the kill = %v, want [idle]", got)
	}
	if got := slices.Compact(slices.Clone(all)); !slices.Equal(got, all) {
		t.Errorf("states observed = %v: a state told twice in a row", all)
	}
	if st := g.Status(); st.State != session.StateIdle || st.PID != 0 {
		t.Errorf("Status after the kill: state %s, pid %d; want idle with no pid", st.State, st.PID)
	}
}

// TestStateObserverSeesBackoffEnd checks that the end of a back-off, which
// only time marks, reaches a StateObserver: failed, then idle once
// CrashBackoff has passed, with no call in between.
func TestStateObserverSeesBackoffEnd(t *testing.T) {
	t.Parallel()
	const backoff = 200 * time.Millisecond
	rec := &stateRecorder{}
	cfg := mcpconfig.ServerConfig{Name: "missing", Transport: mcpconfig.TransportStdio, Command: filepath.Join(t.TempDir(), "no-such-server"), Enabled: true}
	g := newGateway(t, cfg, &Options{Observer: rec, CrashLoopDeaths: 1, CrashBackoff: backoff})
	if _, err := g.Execute(t.Context(), "anything", nil); err == nil {
		t.Fatal("execute on a missing command succeeded")
	}
	testenv.WaitFor(t, 5*time.Second, "failed to be observed", func() bool { return rec.last() == session.StateFailed })
	if st := g.Status(); st.State != session.StateFailed || st.RetryAt == nil {
		t.Fatalf("Status after the failed connect: state %s, retry_at %v; want failed with a retry time", st.State, st.RetryAt)
	}
	testenv.WaitFor(t, backoff+5*time.Second, "the end of the back-off to be observed", func() bool { return rec.last() == session.StateIdle })
	if got := rec.seen(); got[len(got)-2] != session.StateFailed {
		t.Errorf("states observed = %v, want failed then idle at the end", got)
	}
	if st := g.Status(); st.State != session.StateIdle {
		t.Errorf("Status after the back-off: state %s, want idle", st.State)
	}
}

// TestStateObserverEndsWithClose checks that a gateway whose observer was
// told of changes leaves no goroutine (TestMain checks) and reports nothing
// after Close, even in back-off, when its timer is armed.
func TestStateObserverEndsWithClose(t *testing.T) {
	t.Parallel()
	rec := &stateRecorder{}
	cfg := mcpconfig.ServerConfig{Name: "missing", Transport: mcpconfig.TransportStdio, Command: filepath.Join(t.TempDir(), "no-such-server"), Enabled: true}
	g := New(cfg, &Options{Observer: rec, CrashLoopDeaths: 1, CrashBackoff: time.Hour})
	if _, err := g.Execute(t.Context(), "anything", nil); err == nil {
		t.Fatal("execute on a missing command succeeded")
	}
	testenv.WaitFor(t, 5*time.Second, "failed to be observed", func() bool { return rec.last() == session.StateFailed })
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	n := len(rec.seen())
	if err := g.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
	if got := rec.seen(); len(got) != n || got[n-1] != session.StateFailed {
		t.Errorf("states observed = %v, want nothing after Close (closed is not reported)", got)
	}
}
