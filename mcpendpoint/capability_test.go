package mcpendpoint

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// samplingUpstream speaks 2026-07-28: its tool "haiku" asks the client's
// model with an input_required result and answers with what it got.
func samplingUpstream(t *testing.T) string {
	t.Helper()
	s := mcpserver.NewMCPServer("poet", "1")
	s.AddTool(mcp.NewTool("haiku"), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r := mcpserver.SamplingResponse(req.Params.InputResponses, "verse"); r != nil {
			tc, _ := r.Content.(mcp.TextContent)
			return mcp.NewToolResultText("wrote: " + tc.Text), nil
		}
		return mcpserver.NewInputRequestBuilder("").Sample("verse", mcp.CreateMessageParams{MaxTokens: 50,
			Messages: []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("a haiku")}}}).ToolResult(), nil
	})
	return serveUpstream(t, s)
}

// TestSamplingNeedsTheCapability: a server that asks for sampling during
// the call of a 2026-07-28 client that did not declare sampling, with the
// server's "sampling" off, gets the client -32021
// MissingRequiredClientCapability with HTTP 400 and
// data.requiredCapabilities.sampling (SEP-2575); a client that declared
// it answers the question, and a 2025-11-25 client without it gets an
// isError result saying why, as before.
func TestSamplingNeedsTheCapability(t *testing.T) {
	src := &source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{gateway(t, "poet", samplingUpstream(t))}}
	base := serve(t, New(src, nil))

	status, body := modernPost(t, base, "tools/call", "poet__haiku", `"name":"poet__haiku","arguments":{}`)
	var answer struct {
		ID    int `json:"id"`
		Error *struct {
			Code int `json:"code"`
			Data struct {
				Required map[string]json.RawMessage `json:"requiredCapabilities"`
			} `json:"data"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &answer); err != nil || answer.Error == nil {
		t.Fatalf("call without sampling: %d %s, want a JSON-RPC error", status, body)
	}
	if status != http.StatusBadRequest || answer.Error.Code != mcp.MISSING_REQUIRED_CLIENT_CAPABILITY || answer.ID != 7 {
		t.Errorf("call without sampling: %d %s, want 400 with -32021 and id 7", status, body)
	}
	if s := answer.Error.Data.Required["sampling"]; len(s) == 0 || s[0] != '{' {
		t.Errorf("requiredCapabilities = %v, want an object with sampling", answer.Error.Data.Required)
	}
	if !strings.Contains(answer.Error.Message, "asked for sampling, which this client did not declare") {
		t.Errorf("message %q does not say what is missing", answer.Error.Message)
	}

	modern, _ := modernClient(t, base, "alice") // declares sampling
	if text, err := callText(t.Context(), modern, "poet__haiku", nil); err != nil || !strings.HasPrefix(text, "wrote: the client's haiku") {
		t.Errorf("with sampling declared: %q, %v", text, err)
	}

	tr, err := mcptransport.NewStreamableHTTP(base + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	old := mcpclient.NewClient(tr, mcpclient.WithProtocolVersion(mcp.ProtocolVersion20251125))
	if err := old.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = old.Close() })
	if _, err := old.Initialize(t.Context(), mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := callText(t.Context(), old, "poet__haiku", nil); err == nil || !strings.Contains(err.Error(), "did not declare the sampling capability") {
		t.Errorf("2025-11-25 client without sampling: %v, want an isError result saying why", err)
	}
}
