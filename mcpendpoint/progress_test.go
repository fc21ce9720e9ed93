package mcpendpoint

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// TestProgressReachesClientUncoalesced: a server's progress reports 30 ms
// apart (closer than the gateway's pace for a person's stream) each reach
// the MCP client, in order, with its token, and the first report, 0,
// too, whichever version the client speaks (a 2026-07-28 call's progress
// goes on the stream of the request waiting on it). The tool answers once
// the client has all three (or after 2 s): mcp-go's transport may drop a
// notification that races the response.
func TestProgressReachesClientUncoalesced(t *testing.T) {
	const gap = 30 * time.Millisecond
	var all chan struct{} // closed when the client has all three; guarded by allMu
	var allMu sync.Mutex
	s := mcpserver.NewMCPServer("up", "1")
	s.AddTool(mcp.NewTool("steps"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		srv := mcpserver.ServerFromContext(ctx)
		for i, p := range []int{0, 50, 100} {
			if i > 0 {
				select {
				case <-time.After(gap):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			_ = srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress),
				map[string]any{"progressToken": req.Params.Meta.ProgressToken, "progress": p, "total": 100})
		}
		allMu.Lock()
		done := all
		allMu.Unlock()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return mcp.NewToolResultText("done"), nil
	})
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(s, mcpserver.WithDisableLocalhostProtection(true)))
	t.Cleanup(hs.Close)
	ep := New(&source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{gateway(t, "up", hs.URL+"/mcp")}}, nil)
	base := serve(t, ep)
	for _, version := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			allMu.Lock()
			all = make(chan struct{})
			done := all
			allMu.Unlock()
			c, err := mcpclient.NewStreamableHttpClient(base + "/mcp")
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var got []float64
			c.OnNotification(func(n mcp.JSONRPCNotification) {
				if n.Method != string(mcp.MethodNotificationProgress) || n.Params.AdditionalFields["progressToken"] != "tok" {
					return
				}
				p, _ := n.Params.AdditionalFields["progress"].(float64)
				mu.Lock()
				got = append(got, p)
				if len(got) == 3 {
					close(done)
				}
				mu.Unlock()
			})
			if err := c.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			init := mcp.InitializeRequest{}
			init.Params.ProtocolVersion = version
			if res, err := c.Initialize(t.Context(), init); err != nil || res.ProtocolVersion != version {
				t.Fatalf("initialize: %v, %+v", err, res)
			}
			req := mcp.CallToolRequest{}
			req.Params.Name = "up__steps"
			req.Params.Meta = &mcp.Meta{ProgressToken: "tok"}
			if _, err := c.CallTool(t.Context(), req); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 3 || got[0] != 0 || got[1] != 50 || got[2] != 100 {
				t.Errorf("progress the client got: %v, want [0 50 100]", got)
			}
		})
	}
}
