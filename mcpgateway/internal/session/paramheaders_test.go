package session

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

const headedSchema = `{"type":"object","properties":{
	"region":{"type":"string","x-mcp-header":"Region"},
	"greeting":{"type":"string","x-mcp-header":"Greeting"},
	"verbose":{"type":"boolean","x-mcp-header":"Verbose"},
	"query":{"type":"string"}},"required":["region"]}`

// TestParamHeaders: on a 2026-07-28 connection over HTTP, a tools/call of a
// tool whose parameters are marked x-mcp-header carries them in Mcp-Param-*
// headers (Base64 for a value that is not plain ASCII; none for an
// unmarked parameter or a missing one), and a tool whose annotations are
// invalid is left out of the listing.
func TestParamHeaders(t *testing.T) {
	t.Parallel()
	// mcp-go's server refuses to register a tool with invalid annotations:
	// the listing gets it from a filter.
	bad := mcp.NewToolWithRawSchema("bad", "an object in a header",
		json.RawMessage(`{"type":"object","properties":{"o":{"type":"object","x-mcp-header":"O"}}}`))
	srv := mcpserver.NewMCPServer("headed", "1.0.0", mcpserver.WithToolCapabilities(true),
		mcpserver.WithToolFilter(func(_ context.Context, tools []mcp.Tool) []mcp.Tool { return append(tools, bad) }))
	srv.AddTool(mcp.NewToolWithRawSchema("headed", "mirrors", json.RawMessage(headedSchema)),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
	h := mcpserver.NewStreamableHTTPServer(srv, mcpserver.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20260728))
	var mu sync.Mutex
	var seen []http.Header
	hs := httptest.NewServer(only2026(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(mcp.HeaderMethod) == "tools/call" {
			mu.Lock()
			seen = append(seen, r.Header.Clone())
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})))
	t.Cleanup(hs.Close)
	c := newTestConn(t, mcpconfig.ServerConfig{Name: "headed", Transport: mcpconfig.TransportHTTP, URL: hs.URL + "/mcp"}, testOptions())
	s, err := c.Session(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := c.ListTools(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 1 || raw[0].Name != "headed" || !ParamHeaders(raw[0].InputSchema) {
		t.Fatalf("ListTools = %+v, want only the tool with valid annotations", raw)
	}
	call := Call{Tool: "headed", Schema: raw[0].InputSchema,
		Inputs: map[string]any{"region": "us-west1", "greeting": "Hello, 世界", "query": "SELECT 1"}}
	if _, err := c.CallTool(t.Context(), s, call); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 {
		t.Fatalf("%d tools/call seen", len(seen))
	}
	got := seen[0]
	if got.Get("Mcp-Param-Region") != "us-west1" || got.Get("Mcp-Param-Greeting") != "=?base64?SGVsbG8sIOS4lueVjA==?=" {
		t.Errorf("Mcp-Param headers = Region %q, Greeting %q", got.Get("Mcp-Param-Region"), got.Get("Mcp-Param-Greeting"))
	}
	for k := range got {
		if slices.Contains([]string{"Mcp-Param-Query", "Mcp-Param-Verbose"}, k) {
			t.Errorf("header %s sent for an unmarked or missing parameter", k)
		}
	}
}
