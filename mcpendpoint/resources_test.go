package mcpendpoint

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// modernPost posts one 2026-07-28 request of method, its params' fields
// given as JSON text beside _meta ("" for none), to base's /mcp, with name as Mcp-Name,
// from a client that declared no capabilities, and returns the answer's
// status and body (id 7).
func modernPost(t *testing.T, base, method, name, fields string) (int, []byte) {
	t.Helper()
	return modernRequest(t, base, method, name, fields, `{}`, nil)
}

// modernRequest is modernPost from a client that declared caps (JSON
// text), with more headers.
func modernRequest(t *testing.T, base, method, name, fields, caps string, header map[string]string) (int, []byte) {
	t.Helper()
	if fields != "" {
		fields += ","
	}
	body := `{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":{` + fields + `"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `,` +
		`"io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"}}}}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
	req.Header.Set(mcp.HeaderMethod, method)
	if name != "" {
		req.Header.Set(mcp.HeaderName, name)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestReadUnknownResourceModern: a 2026-07-28 resources/read of a URI no
// server lists is answered -32602 with the URI in the error's data
// (SEP-2164), not as an internal error.
func TestReadUnknownResourceModern(t *testing.T) {
	src := &source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{gateway(t, "a", upstream(t, "echo"))}}
	base := serve(t, New(src, nil))
	const uri = "test://nonexistent-resource"
	status, body := modernPost(t, base, "resources/read", uri, `"uri":"`+uri+`"`)
	var answer struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code    int            `json:"code"`
			Message string         `json:"message"`
			Data    map[string]any `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &answer); err != nil || answer.Error == nil {
		t.Fatalf("resources/read of an unknown URI: %d %s, want a JSON-RPC error", status, body)
	}
	if answer.Error.Code != mcp.INVALID_PARAMS || answer.Error.Data["uri"] != uri || string(answer.ID) != "7" {
		t.Errorf("resources/read of an unknown URI: %s, want code %d with data.uri %q and id 7", body, mcp.INVALID_PARAMS, uri)
	}
	if !strings.Contains(answer.Error.Message, uri) {
		t.Errorf("the error %q does not name the URI", answer.Error.Message)
	}
}
