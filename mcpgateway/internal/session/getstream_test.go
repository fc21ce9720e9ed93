package session

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// getStreamServer is a Streamable HTTP server at 2025-11-25 whose GET
// stream is held by hold before it is served; served reports whether a GET
// got past hold.
func getStreamServer(t *testing.T, hold func(r *http.Request)) (cfg mcpconfig.ServerConfig, served *atomic.Bool) {
	t.Helper()
	srv := mcpserver.NewMCPServer("slow-get", "1", mcpserver.WithToolCapabilities(true))
	h := mcpserver.NewStreamableHTTPServer(srv, mcpserver.WithDisableLocalhostProtection(true))
	served = &atomic.Bool{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			hold(r)
			served.Store(true)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return mcpconfig.ServerConfig{Name: "slow-get", Transport: mcpconfig.TransportHTTP, URL: hs.URL + "/mcp", Enabled: true,
		ProtocolVersion: "2025-11-25", ConnectTimeout: 30 * time.Second, CallTimeout: 10 * time.Second}, served
}

// TestConnectWaitsForGetStream: a connect to a Streamable HTTP server
// before 2026-07-28 returns once the standalone GET stream has its answer.
// A server may drop what it sends while the stream is not open (the
// TypeScript SDK's does), so a call made at once could wait out its
// call_timeout for a question that never comes.
func TestConnectWaitsForGetStream(t *testing.T) {
	cfg, served := getStreamServer(t, func(*http.Request) { time.Sleep(300 * time.Millisecond) })
	c := New(cfg, testOptions(), slog.New(slog.DiscardHandler), func(s string) string { return s })
	defer c.Close()
	if _, err := c.Session(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !served.Load() {
		t.Error("the connect returned before the server answered the GET stream")
	}
}

// TestConnectGetStreamWaitBounded: a server that holds the GET's headers
// back (until it has something to send) delays a connect by at most
// getStreamWait, not its connect_timeout.
func TestConnectGetStreamWaitBounded(t *testing.T) {
	cfg, _ := getStreamServer(t, func(r *http.Request) { <-r.Context().Done() })
	c := New(cfg, testOptions(), slog.New(slog.DiscardHandler), func(s string) string { return s })
	defer c.Close()
	start := time.Now()
	if _, err := c.Session(t.Context()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > getStreamWait+10*time.Second {
		t.Errorf("the connect took %s with the GET stream held, want about getStreamWait (%s)", took, getStreamWait)
	}
}
