package mcpendpoint

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// headerUpstream serves a tool whose region parameter travels in the
// Mcp-Param-Region header too (SEP-2243).
func headerUpstream(t *testing.T) string {
	t.Helper()
	s := mcpserver.NewMCPServer("up", "1")
	s.AddTool(mcp.NewToolWithRawSchema("route", "Routes by region", json.RawMessage(
		`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"note":{"type":"string"}}}`)),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("routed to " + req.GetString("region", "")), nil
		})
	return serveUpstream(t, s)
}

// TestParamHeadersChecked: a 2026-07-28 tools/call of a tool with an
// x-mcp-header parameter must carry the header, in plain text or Base64,
// naming the argument's value; otherwise it is refused with 400 and
// -32020 HeaderMismatch, naming the header, and the tool does not run.
func TestParamHeadersChecked(t *testing.T) {
	src := &source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{
		gateway(t, "a", headerUpstream(t)), gateway(t, "b", upstream(t, "echo"))}}
	base := serve(t, New(src, nil))
	call := func(args string, header map[string]string) (int, map[string]any) {
		t.Helper()
		code, b := modernRequest(t, base, "tools/call", "a__route", `"name":"a__route","arguments":`+args, `{}`, header)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("answer %q: %v", b, err)
		}
		return code, m
	}
	for _, tc := range []struct {
		name, args, header string
		ok                 bool
	}{
		{"plain", `{"region":"eu-west"}`, "eu-west", true},
		{"base64", `{"region":"Hello"}`, "=?base64?SGVsbG8=?=", true},
		{"no wrapper is literal", `{"region":"SGVsbG8="}`, "SGVsbG8=", true},
		{"absent parameter, no header", `{"note":"x"}`, "", true},
		{"missing", `{"region":"eu-west"}`, "", false},
		{"other value", `{"region":"eu-west"}`, "us-east", false},
		{"bad padding", `{"region":"Hello"}`, "=?base64?SGVsbG8?=", false},
		{"bad characters", `{"region":"Hello"}`, "=?base64?SGVs!!!bG8=?=", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			if tc.header != "" {
				h["Mcp-Param-Region"] = tc.header
			}
			code, m := call(tc.args, h)
			if tc.ok {
				res, _ := m["result"].(map[string]any)
				if code != http.StatusOK || res == nil || res["isError"] == true {
					t.Fatalf("%d %v, want the tool's result", code, m)
				}
				return
			}
			e, _ := m["error"].(map[string]any)
			if code != http.StatusBadRequest || rpcCode(m) != mcp.HEADER_MISMATCH || !strings.Contains(e["message"].(string), "Mcp-Param-Region") {
				t.Fatalf("%d %v, want 400 -32020 naming Mcp-Param-Region", code, m)
			}
			if m["id"] != float64(7) {
				t.Errorf("error id %v, want 7", m["id"])
			}
		})
	}
}
