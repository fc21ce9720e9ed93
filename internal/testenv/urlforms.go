package testenv

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// URLFormsServer starts an MCP server over Streamable HTTP, stopped when tb
// ends, and returns its URL. Its tool "link" asks a url-mode question with
// elicitationId up-7; once it is accepted, it sends
// notifications/elicitation/complete for an id it never asked and then for
// up-7, and waits for relayed (at most 10 s) before it answers "signed":
// mcp-go's server can drop a notification sent just before a call's answer.
func URLFormsServer(tb testing.TB, relayed <-chan struct{}) string {
	tb.Helper()
	s := mcpserver.NewMCPServer("forms", "1", mcpserver.WithElicitation())
	s.AddTool(mcp.NewTool("link", mcp.WithDescription("signs a form on the web")), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		srv := mcpserver.ServerFromContext(ctx)
		res, err := srv.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{
			Mode: mcp.ElicitationModeURL, Message: "sign the form", URL: "https://forms.example/7", ElicitationID: "up-7"}})
		if err != nil || res.Action != mcp.ElicitationResponseActionAccept {
			return mcp.NewToolResultError("the form was not accepted"), nil
		}
		session := mcpserver.ClientSessionFromContext(ctx)
		_ = srv.SendElicitationComplete(ctx, session, "never-asked")
		if err := srv.SendElicitationComplete(ctx, session, "up-7"); err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		select {
		case <-relayed:
		case <-wctx.Done():
		}
		return mcp.NewToolResultText("signed"), nil
	})
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(s, mcpserver.WithDisableLocalhostProtection(true)))
	tb.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}
