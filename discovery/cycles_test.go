package discovery

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway"
)

// pidLog records every stdio child the gateways start.
type pidLog struct {
	mu   sync.Mutex
	pids []int
}

func (l *pidLog) add(pid int) {
	l.mu.Lock()
	l.pids = append(l.pids, pid)
	l.mu.Unlock()
}

func (l *pidLog) all() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.pids...)
}

// processState returns "" when pid has exited and been reaped, else its
// state letter from /proc/<pid>/stat ("Z" for a zombie nobody waited for).
func processState(pid int) string {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return ""
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "?"
	}
	// pid (comm) state ...; comm may hold spaces and parentheses.
	rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
	if f := strings.Fields(rest); len(f) > 0 {
		return f[0]
	}
	return "?"
}

// TestReloadCyclesLeakNothing adds a server, uses it once so that it has a
// process, and removes it again, 100 times with the real todo-mcp: 90
// cycles through Reload, then 10 through the file watcher. (todo-mcp starts
// in about 0.1 s; a race-built test binary posing as a cheap server was
// slower.) Every child must end when its
// server leaves the config (exited and reaped, no zombie), and once Close
// returns no goroutine of the cycles may remain.
func TestReloadCyclesLeakNothing(t *testing.T) {
	const (
		direct  = 90
		watched = 10
	)
	ignore := goleak.IgnoreCurrent()
	bin := testenv.TodoMCP(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	db := filepath.Join(dir, "todos.db")
	// "base" stays through every cycle and is never used: an unchanged
	// server keeps its gateway, and one never called starts no process.
	base := todoServer("base", bin, filepath.Join(dir, "base.db"))
	todo := todoServer("s", bin, db)
	writeConfig(t, path, servers(base))

	var spawned pidLog
	reloadErrs := make(chan error, 1)
	d := New(path, &recordingSink{}, &Options{
		Debounce:   10 * time.Millisecond,
		DrainGrace: time.Second,
		Gateway:    &mcpgateway.Options{CloseGrace: 500 * time.Millisecond, OnProcessStart: spawned.add},
		OnReload: func(err error) {
			if err != nil {
				select {
				case reloadErrs <- err:
				default:
				}
			}
		},
	})
	closed := false
	defer func() {
		if !closed {
			closeDiscovery(t, d)
		}
	}()
	if err := d.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	baseGateway, _ := d.Gateway("base")

	// use calls the server once, so that it has a process.
	use := func(i int) {
		t.Helper()
		g, ok := d.Gateway("s")
		if !ok {
			t.Fatalf("cycle %d: server s not there after it was added", i)
		}
		cr, err := g.Execute(t.Context(), "list_todos", map[string]any{})
		if err != nil || cr.IsError {
			t.Fatalf("cycle %d: list_todos: %v %+v", i, err, cr)
		}
	}

	start := time.Now()
	for i := range direct {
		writeConfig(t, path, servers(base, todo))
		if err := d.Reload(t.Context()); err != nil {
			t.Fatalf("cycle %d: reload adding s: %v", i, err)
		}
		use(i)
		writeConfig(t, path, servers(base))
		if err := d.Reload(t.Context()); err != nil {
			t.Fatalf("cycle %d: reload removing s: %v", i, err)
		}
		if _, ok := d.Gateway("s"); ok {
			t.Fatalf("cycle %d: server s still there after it was removed", i)
		}
	}

	if err := d.Watch(); err != nil {
		t.Fatal(err)
	}
	for i := direct; i < direct+watched; i++ {
		writeConfig(t, path, servers(base, todo))
		testenv.WaitFor(t, 5*time.Second, fmt.Sprintf("cycle %d: the watcher to add s", i), func() bool {
			_, ok := d.Gateway("s")
			return ok
		})
		use(i)
		writeConfig(t, path, servers(base))
		testenv.WaitFor(t, 5*time.Second, fmt.Sprintf("cycle %d: the watcher to remove s", i), func() bool {
			_, ok := d.Gateway("s")
			return !ok
		})
	}
	select {
	case err := <-reloadErrs:
		t.Fatalf("a reload failed: %v", err)
	default:
	}
	if g, _ := d.Gateway("base"); g != baseGateway {
		t.Error("the unchanged server was replaced during the cycles")
	}
	t.Logf("%d cycles in %v", direct+watched, time.Since(start))

	pids := spawned.all()
	if len(pids) != direct+watched {
		t.Errorf("%d processes started, want one per cycle (%d)", len(pids), direct+watched)
	}
	// Removing a server ends its process: no Close needed for that.
	testenv.WaitFor(t, 10*time.Second, "every removed server's process to end", func() bool {
		for _, pid := range pids {
			if processState(pid) != "" {
				return false
			}
		}
		return true
	})

	closed = true
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if st := processState(pid); st != "" {
			t.Errorf("child %d still exists after Close, state %s (Z: exited but never reaped)", pid, st)
		}
	}
	goleak.VerifyNone(t, ignore)
}
