package mcpgateway

import (
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

// runExecute calls the gateway tool's execute action as the tree does and
// returns its self-healing result.
func runExecute(t *testing.T, g *Gateway) tools.Result {
	t.Helper()
	res, err := g.Run(t.Context(), tools.Call{Args: map[string]any{"action": "execute", "tool_name": "anything", "tool_inputs": map[string]any{}}}, tools.Discard)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !res.IsError {
		t.Fatalf("Run on a server that cannot run succeeded: %+v", res)
	}
	return res
}

// TestFailedConnectShowsFailed: a server whose connect failed is failed,
// with the reason, until the next attempt; not idle as if all were well.
func TestFailedConnectShowsFailed(t *testing.T) {
	for name, cmd := range map[string]string{
		"not on PATH": "elysia-no-such-command",
		"no file":     filepath.Join(t.TempDir(), "no-such-server"),
	} {
		t.Run(name, func(t *testing.T) {
			g := newGateway(t, mcpconfig.ServerConfig{Name: "bad", Transport: mcpconfig.TransportStdio, Command: cmd, Enabled: true}, nil)
			res := runExecute(t, g)
			st := g.Status()
			if st.State != session.StateFailed || !strings.Contains(st.LastError, cmd) {
				t.Errorf("Status after a failed connect: state %s, last_error %q; want failed naming %s", st.State, st.LastError, cmd)
			}
			if strings.Contains(res.Feedback, "try again later") || !strings.Contains(res.Feedback, "mcp.json") {
				t.Errorf("advice for a command that does not exist = %q; want it permanent, pointing at mcp.json", res.Feedback)
			}
		})
	}
}

// TestSelfHealingAdviceHTTP: a URL whose server answers 404 is a permanent
// failure (fix the URL), a refused connection a transient one (try again
// later).
func TestSelfHealingAdviceHTTP(t *testing.T) {
	notFound := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notFound.Close)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String() + "/mcp"
	_ = l.Close()

	g := newGateway(t, mcpconfig.ServerConfig{Name: "gone", Transport: mcpconfig.TransportHTTP, URL: notFound.URL + "/mcp", Enabled: true}, nil)
	if res := runExecute(t, g); strings.Contains(res.Feedback, "try again later") || !strings.Contains(res.Feedback, "mcp.json") {
		t.Errorf("advice for a 404 = %q (error %q); want it permanent, pointing at mcp.json", res.Feedback, res.Error)
	}
	g = newGateway(t, mcpconfig.ServerConfig{Name: "down", Transport: mcpconfig.TransportHTTP, URL: refused, Enabled: true}, nil)
	if res := runExecute(t, g); !strings.Contains(res.Feedback, "try again later") {
		t.Errorf("advice for a refused connection = %q (error %q); want try again later", res.Feedback, res.Error)
	}
}
