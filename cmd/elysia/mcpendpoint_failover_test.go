package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/internal/testenv"
)

// todoHTTPProc starts todo-mcp over Streamable HTTP on a free port and
// returns its URL and process.
func todoHTTPProc(t *testing.T) (string, *exec.Cmd) {
	t.Helper()
	port := testenv.FreePort(t)
	cmd := exec.Command(testenv.TodoMCP(t), "--http", fmt.Sprintf("127.0.0.1:%d", port)) //nolint:noctx // Start's cleanup owns the child
	cmd.Env = append(os.Environ(), "TODO_DB="+filepath.Join(t.TempDir(), "todos.db"))
	testenv.Start(t, cmd)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	testenv.WaitHTTP(t, base+"/", 15*time.Second)
	return base + "/mcp", cmd
}

// TestMCPEndpointFailsOver: /mcp fails over between a server's copies for
// a 2025-11-25 client and a 2026-07-28 one alike, and /api/servers says
// which copy serves.
func TestMCPEndpointFailsOver(t *testing.T) {
	t.Parallel()
	primary, proc := todoHTTPProc(t)
	spare, _ := todoHTTPProc(t)
	cfg := fmt.Sprintf(`{"expose": {"mode": "tools"}, "servers": {"todo": {"url": %q, "copies": [{"url": %q}]}}}`, primary, spare)
	s := startService(t, serveOptions{Config: cfg})

	legacy := mcpClient(t, s.URL, "")
	tr, err := mcptransport.NewStreamableHTTP(s.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	modern := mcpclient.NewClient(tr)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := modern.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = modern.Close() })
	if res, err := modern.Initialize(ctx, mcp.InitializeRequest{}); err != nil || res.ProtocolVersion != mcp.ProtocolVersion20260728 {
		t.Fatalf("initialize: %v, %+v; want 2026-07-28", err, res)
	}
	for _, c := range []*mcpclient.Client{legacy, modern} {
		if text, isErr := callText(t, c, "todo__create_todo", map[string]any{"title": "on copy 1"}); isErr {
			t.Fatalf("before the kill: %s", text)
		}
	}
	// Killed between calls: once its port refuses connections, a call
	// was never sent and goes to copy 2 whatever the tool. (A write sent
	// in the instant of the kill may have run, and is not replayed.)
	_ = proc.Process.Kill()
	addr := strings.TrimSuffix(strings.TrimPrefix(primary, "http://"), "/mcp")
	testenv.WaitFor(t, 10*time.Second, "the primary's port to close", func() bool {
		conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(t.Context(), "tcp", addr)
		if err == nil {
			_ = conn.Close()
		}
		return err != nil
	})
	for i, c := range []*mcpclient.Client{legacy, modern} {
		text, isErr := callText(t, c, "todo__create_todo", map[string]any{"title": fmt.Sprintf("on copy 2 (%d)", i)})
		if isErr || !strings.Contains(text, "on copy 2") {
			t.Fatalf("client %d after the primary died: %s (isError %v); want copy 2 to serve it", i, text, isErr)
		}
	}
	code, servers := do(t, http.MethodGet, s.URL+"/api/servers", "", nil)
	body := jsonOf(servers)
	if code != http.StatusOK || !strings.Contains(body, `"serving":"copy 2"`) || !strings.Contains(body, `"policy":"priority"`) ||
		!strings.Contains(body, `"label":"copy 1"`) || !strings.Contains(body, `"down":true`) {
		t.Errorf("GET /api/servers = %d, want copy 2 serving and copy 1 down:\n%s", code, body)
	}
}
