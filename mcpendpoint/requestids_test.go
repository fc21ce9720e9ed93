package mcpendpoint

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// askingUpstream is an MCP server whose tool "ask" puts its argument q to
// the client as a question and answers with what the client said.
func askingUpstream(t *testing.T) string {
	t.Helper()
	s := mcpserver.NewMCPServer("up", "1", mcpserver.WithElicitation())
	s.AddTool(mcp.NewTool("ask", mcp.WithString("q", mcp.Required())), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		q := req.GetString("q", "")
		er := mcp.ElicitationRequest{}
		er.Params.Message = "q=" + q
		er.Params.RequestedSchema = map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}
		res, err := mcpserver.ServerFromContext(ctx).RequestElicitation(ctx, er)
		if err != nil {
			return nil, err
		}
		content, _ := res.Content.(map[string]any)
		return mcp.NewToolResultText(fmt.Sprint(content["a"])), nil
	})
	return serveUpstream(t, s)
}

// TestRequestIDsAcrossReplicas: two replicas behind a balancer that
// alternates between them each put a question to one client session at
// once, both numbered by their own mcp-go from 1; each call gets the
// answer to its own question, wherever the client's answer lands.
func TestRequestIDsAcrossReplicas(t *testing.T) {
	src := &source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{gateway(t, "up", askingUpstream(t))}}
	store := &memSessions{}
	var epA, epB *Endpoint
	epA = New(src, &Options{Sessions: store, Relay: newMemRelay(t, func() *Endpoint { return epB })})
	epB = New(src, &Options{Sessions: store, Relay: newMemRelay(t, func() *Endpoint { return epA })})
	lb := testenv.RoundRobin(t, serve(t, epA), serve(t, epB))
	tr, err := mcptransport.NewStreamableHTTP(lb + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	// The client answers each question with the question itself.
	c := mcpclient.NewClient(tr, mcpclient.WithElicitationHandler(elicitHandler(func(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept,
			Content: map[string]any{"a": req.Params.Message}}}, nil
	})))
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	init.Params.Capabilities.Elicitation = &mcp.ElicitationCapability{Form: &struct{}{}}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	for round := range 4 {
		var wg sync.WaitGroup
		got := make([]string, 2)
		for i := range 2 {
			wg.Go(func() {
				req := mcp.CallToolRequest{}
				req.Params.Name = "up__ask"
				req.Params.Arguments = map[string]any{"q": fmt.Sprintf("%d-%d", round, i)}
				res, err := c.CallTool(t.Context(), req)
				if err != nil {
					got[i] = "error: " + err.Error()
					return
				}
				for _, ct := range res.Content {
					if tc, ok := ct.(mcp.TextContent); ok {
						got[i] += tc.Text
					}
				}
			})
		}
		wg.Wait()
		for i, g := range got {
			if want := fmt.Sprintf("q=%d-%d", round, i); !strings.Contains(g, want) {
				t.Errorf("round %d, call %d got %q, want the answer to its own question (%s)", round, i, g, want)
			}
		}
	}
}
