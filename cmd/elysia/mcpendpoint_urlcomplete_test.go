package main

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/internal/testenv"
)

// TestMCPEndpointAskURLElicitationComplete: a server's url-mode question
// during the agent's run (ask) reaches the MCP client that called ask, and
// the server's notifications/elicitation/complete for it reaches that
// client under the id it got.
func TestMCPEndpointAskURLElicitationComplete(t *testing.T) {
	relayed := make(chan struct{})
	var once sync.Once
	llm := newFakeLLM(t, call("mcp_forms", map[string]any{"action": "execute", "tool_name": "link", "tool_inputs": map[string]any{}}),
		answer("done"))
	s := startService(t, serveOptions{Env: llm.Env(), Config: fmt.Sprintf(
		`{"servers": {"forms": {"type": "http", "url": %q, "call_timeout": 20}}}`, testenv.URLFormsServer(t, relayed))})
	var mu sync.Mutex
	var asked, completed []string
	c := capsClient(t, s.URL, mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}}},
		mcpclient.WithElicitationHandler(elicitFunc(func(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, req.Params.Mode+" "+req.Params.ElicitationID)
			return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept}}, nil
		})))
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != string(mcp.MethodNotificationElicitationComplete) {
			return
		}
		id, _ := n.Params.AdditionalFields["elicitationId"].(string)
		mu.Lock()
		defer mu.Unlock()
		completed = append(completed, id)
		once.Do(func() { close(relayed) })
	})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "ask", map[string]any{"question": "sign the form for me"}
	if res, err := c.CallTool(ctx, req); err != nil || res.IsError {
		t.Fatalf("ask: %v %s", err, jsonOf(res))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || len(asked[0]) <= len("url ") || asked[0][:4] != "url " || asked[0] == "url up-7" {
		t.Fatalf("the client was asked %q, want one url-mode question under an id of the service's", asked)
	}
	if len(completed) != 1 || "url "+completed[0] != asked[0] {
		t.Errorf("completions %q, want one for the question the client got (%s)", completed, asked[0])
	}
}
