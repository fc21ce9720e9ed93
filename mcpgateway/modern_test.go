package mcpgateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

// newModernServer serves echo and ask (the user's name, asked with an
// input_required result) as a server that speaks only 2026-07-28: mcp-go's
// server with that version alone, and any POST of another version (an
// initialize) a method it does not know, 404 and -32601, since mcp-go's
// server alone answers initialize whatever its versions.
func newModernServer(t *testing.T) (*mcpserver.MCPServer, mcpconfig.ServerConfig) {
	t.Helper()
	srv := mcpserver.NewMCPServer("modern", "1.0.0", mcpserver.WithToolCapabilities(true))
	srv.AddTool(mcp.NewTool("echo", mcp.WithString("message", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("Echo: " + req.GetString("message", "")), nil
		})
	srv.AddTool(mcp.NewTool("ask"), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ans := mcpserver.ElicitationResponse(req.Params.InputResponses, "name")
		if ans == nil {
			return mcpserver.NewInputRequestBuilder("").Elicit("name", mcp.ElicitationParams{Message: "Your name?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}).ToolResult(), nil
		}
		content, _ := ans.Content.(map[string]any)
		return mcp.NewToolResultText(fmt.Sprintf("%s: %v", ans.Action, content["name"])), nil
	})
	h := mcpserver.NewStreamableHTTPServer(srv, mcpserver.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20260728))
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && !mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"Method not found"}}`)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return srv, mcpconfig.ServerConfig{Name: "modern", Transport: mcpconfig.TransportHTTP, URL: hs.URL + "/mcp", Enabled: true,
		ConnectTimeout: 5 * time.Second, CallTimeout: 5 * time.Second}
}

// TestModernServer: through the gateway a server that speaks only
// 2026-07-28 lists and runs its tools like any other, its question reaches
// the user of the call, a tool it adds is listed, and Status shows the
// version.
func TestModernServer(t *testing.T) {
	t.Parallel()
	srv, cfg := newModernServer(t)
	g := newGateway(t, cfg, nil)
	infos, err := g.List(t.Context())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if got := strings.Join(toolNames(infos), ","); got != "ask,echo" {
		t.Errorf("tools %s, want ask,echo", got)
	}
	if st := g.Status(); st.ProtocolVersion != mcp.ProtocolVersion20260728 {
		t.Errorf("Status().ProtocolVersion = %q, want %s", st.ProtocolVersion, mcp.ProtocolVersion20260728)
	}
	res, err := g.Execute(t.Context(), "echo", map[string]any{"message": "hi"})
	if err != nil || res.IsError || res.Text() != "Echo: hi" {
		t.Fatalf("echo = %+v, %v", res, err)
	}
	u := &userStream{answer: func(tools.Question) tools.Answer {
		return tools.Answer{Action: tools.ElicitAccept, Content: map[string]any{"name": "Ada"}}
	}}
	res, err = g.ExecuteWith(t.Context(), "ask", nil, u)
	if err != nil || res.IsError || res.Text() != "accept: Ada" {
		t.Fatalf("ask = %+v, %v; want the user's answer", res, err)
	}
	if len(u.asked) != 1 || u.asked[0].Payload.Message != "Your name?" || u.asked[0].Payload.Server != "modern" {
		t.Errorf("the user was asked %+v, want the server's question", u.asked)
	}

	// Added again until listed: a list_changed sent before the
	// subscriptions/listen stream is open is lost.
	testenv.WaitFor(t, 10*time.Second, "the added tool to be listed", func() bool {
		srv.AddTool(mcp.NewTool("added"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("new"), nil
		})
		infos, err := g.List(t.Context())
		return err == nil && slices.Contains(toolNames(infos), "added")
	})
}
