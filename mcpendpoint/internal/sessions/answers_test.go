package sessions

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// TestNotPendingTextOfMCPGo pins notPending to what the mcp-go in go.mod
// answers to a client's answer that no request of the session waits for:
// ServeAnswer recognises it by that text (mcp-go exposes no typed error
// for it), so an upgrade that rewords it fails here instead of silently
// stopping the relay of answers between replicas.
func TestNotPendingTextOfMCPGo(t *testing.T) {
	srv := mcpserver.NewMCPServer("pin", "1")
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(srv, mcpserver.WithDisableLocalhostProtection(true)))
	defer hs.Close()
	post := func(session, body string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, hs.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", mcp.ProtocolVersion20251125)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }() // read to the end below
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
	}
	_, sid, _ := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	if sid == "" {
		t.Fatal("initialize: no session id")
	}
	code, _, body := post(sid, `{"jsonrpc":"2.0","id":42,"result":{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}}`)
	if code != http.StatusBadRequest || !strings.Contains(body, notPending) {
		t.Errorf("an answer nobody waits for: %d %q; ServeAnswer looks for 400 and %q", code, body, notPending)
	}
}
