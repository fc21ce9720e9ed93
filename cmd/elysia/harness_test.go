package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
)

// elysiaBin returns the elysia binary: $ELYSIA_BIN (make test builds it
// once) or a build made once per test process.
func elysiaBin(tb testing.TB) string {
	tb.Helper()
	testenv.Integration(tb)
	if p := os.Getenv("ELYSIA_BIN"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	bin, err := buildElysia()
	if err != nil {
		tb.Fatal(err)
	}
	return bin
}

var buildElysia = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "elysia-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "elysia")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/elysia: %v\n%s", err, out)
	}
	return bin, nil
})

// service is a running `elysia serve` started by a test.
type serviceProc struct {
	URL    string // http://127.0.0.1:PORT
	Dir    string // its working folder (mcp.json, data/)
	Config string // path of its mcp.json
	cmd    *exec.Cmd
	out    *testenv.SyncBuffer
	done   chan struct{}
}

// serveOptions says how to start the service.
type serveOptions struct {
	// Config is the mcp.json body; "" means one todo server over stdio
	// with its database in the service's folder.
	Config string
	// Dir is the working folder; "" means a new t.TempDir(). Its SQLite
	// file is data/elysia.db (unless Args or Env name a database): reuse a
	// folder to restart a service on the same file.
	Dir string
	// Env is added to the service's environment (KEY=VALUE).
	Env []string
	// Args are extra flags for `elysia serve`.
	Args []string
}

// defaultConfig is one todo server over stdio, as make run configures it.
func defaultConfig(tb testing.TB) string {
	tb.Helper()
	return fmt.Sprintf(`{"servers": {"todo": {"type": "stdio", "command": %q, "env": {"TODO_DB": "./data/todos.db"}, "cwd": "."}}}`, testenv.TodoMCP(tb))
}

// startService runs `elysia serve` on a free loopback port and waits until
// /readyz answers 200. It is stopped (SIGTERM, then waited for) when the
// test ends, and must then exit 0 within 15 s.
func startService(tb testing.TB, o serveOptions) *serviceProc {
	tb.Helper()
	bin := elysiaBin(tb)
	if o.Dir == "" {
		o.Dir = tb.TempDir()
	}
	cfg := filepath.Join(o.Dir, "mcp.json")
	if o.Config == "" {
		o.Config = defaultConfig(tb)
	}
	if _, err := os.Stat(cfg); err != nil || o.Config != "" {
		if err := os.WriteFile(cfg, []byte(o.Config), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(tb))
	args := []string{"serve", "--addr", addr, "--config", cfg}
	if !hasEnv(o.Env, "ELYSIA_DATABASE_URL") { // o.Args may give another --db: the last one wins
		args = append(args, "--db", filepath.Join(o.Dir, "data", "elysia.db"))
	}
	cmd := exec.Command(bin, append(args, o.Args...)...)
	cmd.Dir = o.Dir
	cmd.Env = append(append(cleanEnv(), "XDG_DATA_HOME="+testDataHome(tb)), o.Env...)
	s := &serviceProc{URL: "http://" + addr, Dir: o.Dir, Config: cfg, cmd: cmd, out: &testenv.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start elysia: %v", err)
	}
	go func() { _ = cmd.Wait(); close(s.done) }()
	tb.Cleanup(func() {
		s.Stop(tb)
		if tb.Failed() {
			tb.Logf("elysia output:\n%s", s.out.String())
		}
	})
	testenv.WaitFor(tb, 20*time.Second, "elysia /readyz", func() bool {
		select {
		case <-s.done:
			tb.Fatalf("elysia exited during start-up:\n%s", s.out.String())
		default:
		}
		resp, err := http.Get(s.URL + "/readyz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close() // only the status matters
		return resp.StatusCode == http.StatusOK
	})
	return s
}

// Stop ends the service with SIGTERM and waits for it (idempotent).
func (s *serviceProc) Stop(tb testing.TB) {
	tb.Helper()
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
		tb.Errorf("elysia did not stop within 15 s of SIGINT")
	}
}

// Output returns what the service logged so far.
func (s *serviceProc) Output() string { return s.out.String() }

// cleanEnv is the test's environment without model keys, API keys or a
// user, so that a developer's own settings cannot reach the service under
// test, and
// with XDG_DATA_HOME in the test process's own folder (testDataRoot), so
// that no command finds or writes the developer's database.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "OLLAMA_HOST", "GOOGLE_API_KEY",
			"ELYSIA_LLM", "ELYSIA_MODEL", "ELYSIA_API_KEYS", "ELYSIA_API_KEYS_FILE", "ELYSIA_DATABASE_URL", "MCP_URL",
			"ELYSIA_USER", "XDG_DATA_HOME":
			continue
		}
		out = append(out, kv)
	}
	return append(out, "XDG_DATA_HOME="+testDataRoot)
}

// testDataRoot is the test process's XDG_DATA_HOME (see cleanEnv), made
// and removed by TestMain.
var testDataRoot string

// dataHomes holds each test's own XDG_DATA_HOME (testDataHome), by
// testing.TB.
var dataHomes sync.Map

// testDataHome is tb's own XDG_DATA_HOME, the same for every command tb
// runs (runCLI, startService), so that they share the default database
// (elysia.db in its elysia folder) with each other and with no other test.
func testDataHome(tb testing.TB) string {
	tb.Helper()
	if d, ok := dataHomes.Load(tb); ok {
		return d.(string)
	}
	d, _ := dataHomes.LoadOrStore(tb, tb.TempDir())
	tb.Cleanup(func() { dataHomes.Delete(tb) })
	return d.(string)
}

// hasEnv reports whether env (KEY=VALUE) sets key.
func hasEnv(env []string, key string) bool {
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == key {
			return true
		}
	}
	return false
}

// do sends a request with an optional JSON body and bearer key, and decodes
// a JSON answer into a map (nil for non-JSON).
func do(tb testing.TB, method, url, key string, body any) (int, map[string]any) {
	tb.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			tb.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, url, err)
	}
	defer func() { _ = resp.Body.Close() }() // read to the end below
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, m
}
