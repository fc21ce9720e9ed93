package adapter

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/elysia-go/elysia/discovery"
	"github.com/elysia-go/elysia/tree"
)

func TestLiveChanges(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(cfg, []byte(`{"servers": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	d := discovery.New(cfg, tree.NewManager(nil), nil)
	t.Cleanup(func() { _ = d.Close() }) // nothing started: Close cannot fail
	if err := d.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	life, end := context.WithCancel(t.Context())
	defer end()
	c := NewChanges(life, d)

	ctx, cancel := context.WithCancel(t.Context())
	ch := c.Subscribe(ctx)
	left := c.Subscribe(t.Context())
	if err := d.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []<-chan struct{}{ch, left} {
		select {
		case <-c:
		case <-time.After(10 * time.Second):
			t.Fatal("no value after a reload")
		}
	}
	cancel() // the first stream ends: its channel is left open
	end()    // the service stops: the open stream's channel closes
	select {
	case _, ok := <-left:
		if ok {
			t.Error("a value instead of the close after the service ended")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the channel was not closed when the service ended")
	}
}
