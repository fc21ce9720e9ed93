package main

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"

	"github.com/elysia-go/elysia/internal/testenv"
)

// TestPostgresReplicasMCPSessionOutage: replica B, which reaches
// PostgreSQL through a proxy, loses it; a request of an MCP session that
// replica A opened gets 503 with Retry-After on B, within the store's
// bound of 10 s, not 404 "unknown MCP session" (which tells a client to
// drop its session and its resumable calls).
func TestPostgresReplicasMCPSessionOutage(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := startDBProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	a := startService(t, serveOptions{Args: []string{"--db", dsn}})
	b := startService(t, serveOptions{Args: []string{"--db", u.String()}})

	alice := mcpClient(t, a.URL, "")
	sid := alice.GetTransport().(*mcptransport.StreamableHTTP).GetSessionId()
	p.stop()

	hdr := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25", "Accept": "application/json, text/event-stream"}
	start := time.Now()
	code, h, body := rawDo(t, http.MethodPost, b.URL+"/mcp", "", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), hdr)
	if d := time.Since(start); d > 11*time.Second {
		t.Errorf("B answered after %v, want within the store's bound of 10 s", d)
	}
	if code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
		t.Errorf("A's session on B with B's database down: %d (Retry-After %q) %s, want 503 with Retry-After", code, h.Get("Retry-After"), body)
	}
}
