package mcpendpoint

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// TestModernNotificationAccepted: a 2026-07-28 client's notification
// (notifications/cancelled after it closed a call's stream, as the
// official Go SDK's client sends it, without _meta) is accepted with 202
// and no body; a request that only claims to be one in its Mcp-Method
// header is refused as before, and the endpoint keeps answering.
func TestModernNotificationAccepted(t *testing.T) {
	src := &source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{gateway(t, "a", upstream(t, "echo"))}}
	base := serve(t, New(src, nil))
	post := func(method, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
		req.Header.Set(mcp.HeaderMethod, method)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post("notifications/cancelled",
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"gone"}}`); code != http.StatusAccepted || body != "" {
		t.Errorf("notifications/cancelled: %d %q, want 202 and no body", code, body)
	}
	if code, body := post("notifications/cancelled", `{"jsonrpc":"2.0","id":4,"method":"notifications/cancelled"}`); code == http.StatusAccepted {
		t.Errorf("a request with an id under a notification's header: %d %q, want it refused", code, body)
	}
	if code, body := post("notifications/cancelled", `{"jsonrpc":"2.0","method":"tools/list"}`); code == http.StatusAccepted {
		t.Errorf("a body naming another method: %d %q, want it refused", code, body)
	}
	if code, body := modernPost(t, base, "tools/list", "", ""); code != http.StatusOK || !strings.Contains(string(body), "a__echo") {
		t.Errorf("tools/list after: %d %s", code, body)
	}
}
