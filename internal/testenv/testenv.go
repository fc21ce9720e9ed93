// Package testenv finds and starts the real parts the integration tests need:
// the todo-mcp binary, server-everything from npm, free loopback ports, and a
// poll-with-deadline helper. It is imported by test files only.
//
// Under CI=true a missing real part fails the test instead of skipping it
// (DESIGN.md, "Tests and CI").
package testenv

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// Missing skips t, or fails it under CI=true, because a real part is missing.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("required by the integration tests: %s", msg)
	}
	t.Skipf("skipping: %s (set CI=true to make this a failure)", msg)
}

// Integration skips t in -short mode: integration tests start real processes.
func Integration(t testing.TB) {
	t.Helper()
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("integration test: skipped with -short")
	}
}

// RepoRoot returns the module root (the folder holding go.mod).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

var buildTodo = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "elysia-todo-mcp-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "todo-mcp")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/todo-mcp")
	cmd.Dir = RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/todo-mcp: %v\n%s", err, out)
	}
	return bin, nil
})

// TodoMCP returns the path of the todo-mcp binary: $ELYSIA_TODO_MCP when set
// (make test builds it once into bin/), else a build of ./cmd/todo-mcp made
// once per test process.
func TodoMCP(t testing.TB) string {
	t.Helper()
	Integration(t)
	if p := os.Getenv("ELYSIA_TODO_MCP"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("ELYSIA_TODO_MCP=%s: %v", p, err)
		}
		return p
	}
	bin, err := buildTodo()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// Everything returns the path of server-everything's entry script, installed
// by `make test` (npm ci in testdata/npm), and checks that node is on PATH.
func Everything(t testing.TB) string {
	t.Helper()
	Integration(t)
	if _, err := exec.LookPath("node"); err != nil {
		Missing(t, "node is not on PATH")
	}
	p := filepath.Join(RepoRoot(), "testdata", "npm", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(p); err != nil {
		Missing(t, "server-everything is not installed (run: npm ci --prefix testdata/npm)")
	}
	return p
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// WaitFor polls cond every 10 ms until it returns true or timeout passes, and
// fails t with what when it never does.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Start runs cmd as a child of the test, stopped (killed and waited for) when
// the test ends. Its output goes to the test log on failure.
func Start(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	out := &lockedBuffer{}
	if cmd.Stdout == nil {
		cmd.Stdout = out
	}
	if cmd.Stderr == nil {
		cmd.Stderr = out
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("%s did not exit after kill", cmd.Path)
		}
		if t.Failed() {
			t.Logf("output of %s:\n%s", cmd.Path, out.String())
		}
	})
}

// WaitHTTP waits until something answers HTTP at url (any status).
func WaitHTTP(t testing.TB, url string, timeout time.Duration) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	WaitFor(t, timeout, "HTTP server at "+url, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})
}

// TodoHTTP starts todo-mcp with a fresh database on a free port over
// streamable HTTP ("http") or SSE ("sse") and returns its URL
// (http://127.0.0.1:PORT/mcp or .../sse).
func TodoHTTP(t testing.TB, transport string) string {
	t.Helper()
	bin := TodoMCP(t)
	port := FreePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "--"+transport, addr)
	cmd.Env = append(os.Environ(), "TODO_DB="+filepath.Join(t.TempDir(), "todos.db"))
	Start(t, cmd)
	base := "http://" + addr
	WaitHTTP(t, base+"/", 15*time.Second)
	if transport == "sse" {
		return base + "/sse"
	}
	return base + "/mcp"
}

// EverythingHTTP starts server-everything over "streamableHttp" or "sse" on a
// free port and returns its URL.
func EverythingHTTP(t testing.TB, transport string) string {
	t.Helper()
	script := Everything(t)
	port := FreePort(t)
	cmd := exec.Command("node", script, transport)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	Start(t, cmd)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	WaitHTTP(t, base+"/", 30*time.Second)
	if transport == "sse" {
		return base + "/sse"
	}
	return base + "/mcp"
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf) > 1<<20 {
		return len(p), nil
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
