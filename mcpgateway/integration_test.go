package mcpgateway

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

var todoTools = []string{"create_todo", "list_todos", "update_todo", "search_todos", "delete_todo"}

func todoStdio(t *testing.T) mcpconfig.ServerConfig {
	t.Helper()
	bin := testenv.TodoMCP(t)
	return mcpconfig.ServerConfig{Name: "todo", Transport: mcpconfig.TransportStdio, Command: bin, Enabled: true,
		Env: map[string]string{"TODO_DB": filepath.Join(t.TempDir(), "todos.db")}}
}

func everythingStdio(t *testing.T) mcpconfig.ServerConfig {
	t.Helper()
	script := testenv.Everything(t)
	return mcpconfig.ServerConfig{Name: "everything", Transport: mcpconfig.TransportStdio, Command: "node", Args: []string{script, "stdio"}, Enabled: true}
}

func TestTodoAllTransports(t *testing.T) {
	cases := map[string]func(*testing.T) mcpconfig.ServerConfig{
		"stdio": todoStdio,
		"http": func(t *testing.T) mcpconfig.ServerConfig {
			t.Helper()
			return mcpconfig.ServerConfig{Name: "todo", Transport: mcpconfig.TransportHTTP, URL: testenv.TodoHTTP(t, "http"), Enabled: true}
		},
		"sse": func(t *testing.T) mcpconfig.ServerConfig {
			t.Helper()
			return mcpconfig.ServerConfig{Name: "todo", Transport: mcpconfig.TransportSSE, URL: testenv.TodoHTTP(t, "sse"), Enabled: true}
		},
		"http falls back to sse": func(t *testing.T) mcpconfig.ServerConfig {
			t.Helper()
			return mcpconfig.ServerConfig{Name: "todo", Transport: mcpconfig.TransportHTTP, URL: testenv.TodoHTTP(t, "sse"), Enabled: true}
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			g := newGateway(t, mk(t), nil)
			infos, err := g.List(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, ti := range infos {
				names = append(names, ti.Name)
			}
			for _, want := range todoTools {
				if !strings.Contains(strings.Join(names, ","), want) {
					t.Errorf("tool %s not listed: %v", want, names)
				}
			}
			res, err := g.Run(t.Context(), tools.Call{Args: map[string]any{"action": "execute", "tool_name": "create_todo",
				"tool_inputs": map[string]any{"title": "Buy milk", "priority": 2}}}, tools.Discard)
			if err != nil || res.IsError {
				t.Fatalf("create_todo: %v %+v", err, res)
			}
			if !strings.Contains(res.LLMText, "Buy milk") {
				t.Errorf("create_todo text = %q", res.LLMText)
			}
			_, err = g.Execute(t.Context(), "create_todo", map[string]any{"priority": 9})
			if err == nil || err.Error() != "invalid tool_inputs for create_todo: missing property 'title'; /priority: must be <= 5" {
				t.Errorf("bad inputs: %v", err)
			}
		})
	}
}

func TestEverythingStdioAndHTTP(t *testing.T) {
	cases := map[string]func(*testing.T) mcpconfig.ServerConfig{
		"stdio": everythingStdio,
		"http": func(t *testing.T) mcpconfig.ServerConfig {
			t.Helper()
			return mcpconfig.ServerConfig{Name: "everything", Transport: mcpconfig.TransportHTTP, URL: testenv.EverythingHTTP(t, "streamableHttp"), Enabled: true}
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			g := newGateway(t, mk(t), nil)
			infos, err := g.List(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if len(infos) < 5 {
				t.Fatalf("listed %d tools", len(infos))
			}
			cr, err := g.Execute(t.Context(), "echo", map[string]any{"message": "hi"})
			if err != nil || !strings.Contains(cr.Text(), "hi") {
				t.Fatalf("echo: %v %+v", err, cr)
			}
			cr, err = g.Execute(t.Context(), "get-tiny-image", nil)
			if err != nil {
				t.Fatal(err)
			}
			var image map[string]any
			for _, c := range cr.Content {
				if c["type"] == "image" {
					image = c
				}
			}
			if image == nil || image["mime_type"] != "image/png" || image["data"] == "" {
				t.Errorf("tiny image content = %v", cr.Content)
			}
			if _, err := g.Execute(t.Context(), "echo", map[string]any{"message": 5}); err == nil || !strings.Contains(err.Error(), "/message") {
				t.Errorf("bad echo inputs: %v", err)
			}
		})
	}
}

func TestStdioChildSeesOnlyAllowedEnv(t *testing.T) {
	cfg := everythingStdio(t)
	t.Setenv("OPENAI_API_KEY", "sk-service-secret")
	cfg.Env = map[string]string{"CONFIGURED_VAR": "configured-value"}
	cfg.Secrets = []string{"configured-value"}
	g := newGateway(t, cfg, nil)
	cr, err := g.Execute(t.Context(), "get-env", nil)
	if err != nil {
		t.Fatal(err)
	}
	var raw strings.Builder
	for _, c := range cr.Content {
		fmt.Fprint(&raw, c["text"])
	}
	if strings.Contains(raw.String(), "sk-service-secret") || strings.Contains(raw.String(), "OPENAI_API_KEY") {
		t.Errorf("child saw the service's OPENAI_API_KEY")
	}
	if !strings.Contains(raw.String(), "configured-value") {
		t.Errorf("child did not see its configured env: %.300s", raw.String())
	}
}

func TestOneProcessForConcurrentExecutes(t *testing.T) {
	cfg := todoStdio(t)
	var spawns atomic.Int32
	g := newGateway(t, cfg, &Options{OnProcessStart: func(int) { spawns.Add(1) }})
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := g.Execute(t.Context(), "list_todos", nil)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := spawns.Load(); n != 1 {
		t.Errorf("spawned %d processes, want 1", n)
	}
}

func TestKilledProcessIsReplaced(t *testing.T) {
	cfg := todoStdio(t)
	var spawns atomic.Int32
	g := newGateway(t, cfg, &Options{OnProcessStart: func(int) { spawns.Add(1) }})
	if _, err := g.Execute(t.Context(), "list_todos", nil); err != nil {
		t.Fatal(err)
	}
	pid := g.Status().PID
	if pid == 0 {
		t.Fatal("no pid in Status")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 5*time.Second, "the dead session to be noticed", func() bool { return g.Status().PID != pid })
	if _, err := g.Execute(t.Context(), "list_todos", nil); err != nil {
		t.Fatalf("call after kill: %v", err)
	}
	if st := g.Status(); st.PID == 0 || st.PID == pid || spawns.Load() != 2 {
		t.Errorf("after kill: pid %d (was %d), spawns %d", st.PID, pid, spawns.Load())
	}
}

func TestConnectErrorsNameTheServer(t *testing.T) {
	good := newFakeServer(t)
	other := newGateway(t, good.config("good"), nil)
	port := testenv.FreePort(t)
	tests := []struct {
		name string
		cfg  mcpconfig.ServerConfig
		want string
	}{
		{"missing binary", mcpconfig.ServerConfig{Command: "/nonexistent/mcp-server", Transport: mcpconfig.TransportStdio}, `"/nonexistent/mcp-server" not found`},
		{"garbage on stdout", mcpconfig.ServerConfig{Command: "sh", Args: []string{"-c", "echo garbage; echo oops >&2; sleep 60"}, Transport: mcpconfig.TransportStdio, ConnectTimeout: time.Second}, "initialize"},
		{"no handshake", mcpconfig.ServerConfig{Command: "sleep", Args: []string{"60"}, Transport: mcpconfig.TransportStdio, ConnectTimeout: 500 * time.Millisecond}, "no answer to the handshake"},
		{"nobody listens", mcpconfig.ServerConfig{URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port), Transport: mcpconfig.TransportHTTP, ConnectTimeout: 2 * time.Second}, "connect"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Name, tt.cfg.Enabled = "broken", true
			g := newGateway(t, tt.cfg, nil)
			start := time.Now()
			_, err := g.List(t.Context())
			if err == nil || !strings.Contains(err.Error(), `server "broken"`) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("List = %v, want an error naming the server and %q", err, tt.want)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("failing took %v", d)
			}
			if st := g.Status(); st.LastError == "" {
				t.Errorf("Status has no last_error")
			}
			if _, err := other.Execute(t.Context(), "echo", map[string]any{"message": "ok"}); err != nil {
				t.Errorf("the other gateway stopped working: %v", err)
			}
		})
	}
}

func TestStdioCloseLeavesNoProcess(t *testing.T) {
	cfg := todoStdio(t)
	g := New(cfg, &Options{CloseGrace: time.Second})
	if _, err := g.List(t.Context()); err != nil {
		t.Fatal(err)
	}
	pid := g.Status().PID
	start := time.Now()
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %v", d)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d still exists after Close (kill 0: %v)", pid, err)
	}
}
