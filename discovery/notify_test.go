package discovery

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/elysia-go/elysia/mcpgateway"
)

// countingObserver counts calls, to check that the caller's Observer still
// gets every observation.
type countingObserver struct {
	mu    sync.Mutex // guards calls
	calls int
}

func (o *countingObserver) ObserveCall(string, string, string, time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls++
}

func (o *countingObserver) ObserveCircuit(string, string) {}

func (o *countingObserver) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.calls
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

	if err := d.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !signalled(c) {
		t.Error("no signal after Load")
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

	d.Stop(c)
	writeConfig(t, path, `{"servers": {}}`)
	if err := d.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	if signalled(c) {
		t.Error("signal after Stop")
	}
}
