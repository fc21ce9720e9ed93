package discovery

import (
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway"
)

// countingObserver counts calls and keeps the last state, to check that
// the caller's Observer (and StateObserver) still gets every observation.
type countingObserver struct {
	mu    sync.Mutex // guards calls and state
	calls int
	state mcpgateway.State
}

var _ mcpgateway.StateObserver = (*countingObserver)(nil)

func (o *countingObserver) ObserveCall(string, string, string, time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls++
}

func (o *countingObserver) ObserveCircuit(string, string) {}

func (o *countingObserver) ObserveState(_ string, state mcpgateway.State) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.state = state
}

func (o *countingObserver) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.calls
}

func (o *countingObserver) lastState() mcpgateway.State {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.state
}

// signalled reports whether c holds a value, and empties it.
func signalled(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestNotify(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	// A disabled server: an execute is refused at once, and still observed.
	writeConfig(t, path, `{"servers": {"off": {"type": "http", "url": "http://127.0.0.1:1/mcp", "enabled": false}}}`)
	obs := &countingObserver{}
	d := New(path, &recordingSink{}, &Options{Gateway: &mcpgateway.Options{Observer: obs}})
	defer closeDiscovery(t, d)
	c := make(chan struct{}, 1)
	d.Notify(c)
	d.Notify(c) // twice changes nothing
	cat := make(chan struct{}, 1)
	d.NotifyCatalog(cat)

	if err := d.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !signalled(c) {
		t.Error("no signal after Load")
	}
	if !signalled(cat) {
		t.Error("no catalogue signal after Load")
	}

	g, ok := d.Gateway("off")
	if !ok {
		t.Fatal("no gateway off")
	}
	if _, err := g.Execute(t.Context(), "anything", nil); err == nil {
		t.Fatal("execute on a disabled server succeeded")
	}
	if !signalled(c) {
		t.Error("no signal after an execute")
	}
	if signalled(cat) {
		t.Error("a catalogue signal after an execute")
	}
	if n := obs.count(); n != 1 {
		t.Errorf("the caller's Observer saw %d calls, want 1", n)
	}

	writeConfig(t, path, `{"servers": {`)
	if err := d.Reload(t.Context()); err == nil {
		t.Fatal("Reload of a broken file succeeded")
	}
	if !signalled(c) {
		t.Error("no signal after a failed reload")
	}
	if !signalled(cat) {
		t.Error("no catalogue signal after a failed reload")
	}

	d.Stop(c)
	d.Stop(cat)
	writeConfig(t, path, `{"servers": {}}`)
	if err := d.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	if signalled(c) || signalled(cat) {
		t.Error("signal after Stop")
	}
}

// TestNotifyOnStateChange checks that a change of a gateway's state that no
// request or reload is behind, its stdio process dying, signals the Notify
// channels (which the web UI's event streams follow) and the NotifyCatalog
// ones (the /mcp endpoint's), and still reaches the
// caller's StateObserver.
func TestNotifyOnStateChange(t *testing.T) {
	testenv.Integration(t)
	bin := testenv.TodoMCP(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	writeConfig(t, path, servers(todoServer("todo", bin, filepath.Join(dir, "todo.db"))))
	obs := &countingObserver{}
	d := New(path, &recordingSink{}, &Options{Gateway: &mcpgateway.Options{Observer: obs}})
	defer closeDiscovery(t, d)
	if err := d.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	g, ok := d.Gateway("todo")
	if !ok {
		t.Fatal("no gateway todo")
	}
	if _, err := g.Execute(t.Context(), "list_todos", nil); err != nil {
		t.Fatal(err)
	}
	// The connect is reported on the gateway's own goroutine: wait for it
	// before listening, so that the signal below is the death's.
	testenv.WaitFor(t, 5*time.Second, "connected to be observed", func() bool { return obs.lastState() == mcpgateway.StateConnected })
	c, cat := make(chan struct{}, 1), make(chan struct{}, 1)
	d.Notify(c)
	defer d.Stop(c)
	d.NotifyCatalog(cat) // a change of state is one of the catalogue's
	defer d.Stop(cat)

	pid := g.Status().PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []chan struct{}{c, cat} {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("no signal within 10s of the server's process dying")
		}
	}
	testenv.WaitFor(t, 5*time.Second, "idle to reach the caller's StateObserver", func() bool { return obs.lastState() == mcpgateway.StateIdle })
	if st := g.Status(); st.State != mcpgateway.StateIdle {
		t.Errorf("state after the death = %s, want idle", st.State)
	}
}
