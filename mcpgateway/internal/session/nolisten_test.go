package session

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// TestNoListenLoggedAtDebug: a Streamable HTTP server that offers no GET
// stream (405, as the specification allows) is normal: mcp-go's record of
// it, at error, is logged at debug. It pins noListenText to the mcp-go in
// go.mod: with another text the record stays at error and this fails.
func TestNoListenLoggedAtDebug(t *testing.T) {
	srv := mcpserver.NewMCPServer("quiet", "1", mcpserver.WithToolCapabilities(true))
	h := mcpserver.NewStreamableHTTPServer(srv, mcpserver.WithDisableLocalhostProtection(true))
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.WriteHeader(http.StatusMethodNotAllowed) // no stream here
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer hs.Close()
	logs := &testenv.SyncBuffer{}
	cfg := mcpconfig.ServerConfig{Name: "quiet", Transport: mcpconfig.TransportHTTP, URL: hs.URL + "/mcp", Enabled: true,
		ConnectTimeout: 15 * time.Second, CallTimeout: 10 * time.Second}
	c := New(cfg, testOptions(), slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), func(s string) string { return s })
	defer c.Close()
	if _, err := c.Session(t.Context()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), noListenText) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	var line string
	for l := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(l, noListenText) {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no record of the missing GET stream within 10 s; mcp-go's text changed? logs:\n%s", logs)
	}
	if !strings.Contains(line, "level=DEBUG") {
		t.Errorf("the missing GET stream is logged as %q, want at debug", line)
	}
}

// TestMissingCommandFailedFromStart: a stdio server whose command is not
// there is failed, saying why, as soon as its conn exists, not idle until
// its first call; a connect then fails with the same reason.
func TestMissingCommandFailedFromStart(t *testing.T) {
	cfg := mcpconfig.ServerConfig{Name: "broken", Transport: mcpconfig.TransportStdio, Command: filepath.Join(t.TempDir(), "no-such-server"), Enabled: true}
	c := newTestConn(t, cfg, testOptions())
	st := c.Status()
	if st.State != StateFailed || !strings.Contains(st.LastErr, "no-such-server") || !strings.Contains(st.LastErr, "not found") {
		t.Errorf("status before any call = %s %q, want failed naming the missing command", st.State, st.LastErr)
	}
	if _, err := c.Session(t.Context()); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("connect = %v, want the command not found", err)
	}
	ok := newTestConn(t, mcpconfig.ServerConfig{Name: "todo", Transport: mcpconfig.TransportStdio, Command: testenv.TodoMCP(t)}, testOptions())
	if st := ok.Status(); st.State != StateIdle || st.LastErr != "" {
		t.Errorf("a server whose command is there: %s %q before any call, want idle", st.State, st.LastErr)
	}
}
