package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"

	"github.com/elysia-go/elysia/internal/testenv"
)

// createThenList creates a todo through c and checks that list_todos shows it.
func createThenList(t *testing.T, c *mcpclient.Client) {
	t.Helper()
	initialize(t, c)
	created := mustOK(t, call(t, c, "create_todo", map[string]any{"title": "Water the plants", "tags": []string{"home"}, "due_date": "2026-05-04"}))
	res := call(t, c, "list_todos", map[string]any{"tags": []string{"home"}})
	got := structured[manyResult](t, res)
	if res.IsError || got.Count != 1 || got.Todos[0].ID != created.ID || got.Todos[0].Title != "Water the plants" {
		t.Fatalf("list_todos after create: %+v (%s)", got, text(res))
	}
	if !strings.Contains(text(res), "Water the plants") {
		t.Errorf("list text %q", text(res))
	}
	bad := call(t, c, "update_todo", map[string]any{"todo_id": created.ID, "due_date": "2026-02-30"})
	if !bad.IsError || !strings.Contains(text(bad), "due_date") {
		t.Errorf("bad date over the wire: isError %v, %q", bad.IsError, text(bad))
	}
}

func TestBinaryStdio(t *testing.T) {
	bin := testenv.TodoMCP(t)
	db := filepath.Join(t.TempDir(), "data", "todos.db")
	c, err := mcpclient.NewStdioMCPClient(bin, []string{"TODO_DB=" + db, "TODO_DATABASE_URL="})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close client: %v", err)
		}
	})
	createThenList(t, c)
	if _, err := os.Stat(db); err != nil {
		t.Errorf("database file: %v", err)
	}
}

func TestBinaryStreamableHTTP(t *testing.T) {
	c, err := mcpclient.NewStreamableHttpClient(testenv.TodoHTTP(t, "http"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close client: %v", err)
		}
	})
	createThenList(t, c)
}

func TestBinarySSE(t *testing.T) {
	c, err := mcpclient.NewSSEMCPClient(testenv.TodoHTTP(t, "sse"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close client: %v", err)
		}
	})
	createThenList(t, c)
}

func TestBinaryPostgres(t *testing.T) {
	bin := testenv.TodoMCP(t)
	_, url := postgresStore(t)
	c, err := mcpclient.NewStdioMCPClient(bin, []string{"TODO_DATABASE_URL=" + url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close client: %v", err)
		}
	})
	createThenList(t, c)
}

// rawServer is the binary on raw pipes, for what a client library hides:
// garbage on stdout, exit statuses, stdin closing.
type rawServer struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	done  chan struct{} // closed when the process has been waited for
	err   error         // what Wait returned; read after done
}

// startRaw runs the binary with args and a fresh database; it is killed when t ends.
func startRaw(t *testing.T, args ...string) *rawServer {
	t.Helper()
	cmd := exec.Command(testenv.TodoMCP(t), args...)
	cmd.Env = append(os.Environ(), "TODO_DB="+filepath.Join(t.TempDir(), "todos.db"), "TODO_DATABASE_URL=")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &rawServer{cmd: cmd, stdin: stdin, lines: make(chan string, 16), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
		s.err = cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			t.Error("todo-mcp did not exit after kill")
		}
		if t.Failed() {
			t.Logf("stderr of todo-mcp:\n%s", stderr.String())
		}
	})
	return s
}

func (s *rawServer) send(t *testing.T, msg string) {
	t.Helper()
	if _, err := io.WriteString(s.stdin, msg+"\n"); err != nil {
		t.Fatalf("write %s: %v", msg, err)
	}
}

func (s *rawServer) next(t *testing.T) string {
	t.Helper()
	select {
	case line, ok := <-s.lines:
		if !ok {
			t.Fatal("stdout closed")
		}
		return line
	case <-time.After(30 * time.Second):
		t.Fatal("timed out waiting for a line on stdout")
	}
	return ""
}

// wait returns the exit status once the process has ended.
func (s *rawServer) wait(t *testing.T) int {
	t.Helper()
	for range s.lines { // drain so the reader can reach Wait
	}
	select {
	case <-s.done:
		var ee *exec.ExitError
		if errors.As(s.err, &ee) {
			return ee.ExitCode()
		}
		if s.err != nil {
			t.Fatal(s.err)
		}
		return 0
	case <-time.After(30 * time.Second):
		t.Fatal("timed out waiting for todo-mcp to exit")
	}
	return -1
}

const initializeMsg = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func TestBinaryFaults(t *testing.T) {
	s := startRaw(t, "--fault-garbage", "--fault-start-delay", "300ms", "--fault-tools")
	if line := s.next(t); json.Valid([]byte(line)) {
		t.Fatalf("first line %q is JSON, want garbage", line)
	}
	s.send(t, initializeMsg)
	if line := s.next(t); !strings.Contains(line, `"serverInfo"`) {
		t.Fatalf("initialize answered %q", line)
	}
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	s.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fault","arguments":{"mode":"big","size":1000}}}`)
	if line := s.next(t); !strings.Contains(line, strings.Repeat("x", 1000)) {
		t.Fatalf("big answered %.200q", line)
	}
	s.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fault","arguments":{"mode":"crash"}}}`)
	if code := s.wait(t); code != faultExitCode {
		t.Errorf("exit status %d after crash, want %d", code, faultExitCode)
	}
}

func TestBinaryExitsWhenStdinCloses(t *testing.T) {
	s := startRaw(t)
	s.send(t, initializeMsg)
	s.next(t)
	if err := s.stdin.Close(); err != nil {
		t.Fatal(err)
	}
	if code := s.wait(t); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
}

func TestBinaryGracefulShutdown(t *testing.T) {
	for _, transport := range []string{"http", "sse"} {
		t.Run(transport, func(t *testing.T) {
			addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
			s := startRaw(t, "--"+transport, addr)
			testenv.WaitHTTP(t, "http://"+addr+"/", 15*time.Second)
			// A connected client, with its open stream, must not hold up shutdown.
			var c *mcpclient.Client
			var err error
			if transport == "sse" {
				c, err = mcpclient.NewSSEMCPClient("http://" + addr + "/sse")
			} else {
				c, err = mcpclient.NewStreamableHttpClient("http://" + addr + "/mcp")
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := c.Close(); err != nil {
					t.Errorf("close client: %v", err)
				}
			})
			initialize(t, c)
			mustOK(t, call(t, c, "create_todo", map[string]any{"title": "before shutdown"}))

			start := time.Now()
			if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := s.wait(t); code != 0 {
				t.Errorf("exit status %d after SIGTERM, want 0", code)
			}
			if d := time.Since(start); d > 4*time.Second {
				t.Errorf("shutdown took %v, want it well inside the 5 s grace period", d)
			}
		})
	}
}

func TestBinaryUsage(t *testing.T) {
	bin := testenv.TodoMCP(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--version"}, 0, "todo-mcp " + version},
		{[]string{"-h"}, 0, "--fault-tools"},
		{[]string{"--bogus"}, exitUsage, "flag provided but not defined"},
	} {
		out, err := exec.Command(bin, tc.args...).CombinedOutput()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		if code != tc.code || !strings.Contains(string(out), tc.want) {
			t.Errorf("todo-mcp %v: status %d, output %q; want %d and %q", tc.args, code, out, tc.code, tc.want)
		}
	}
}
