package mcpgateway

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// TestListChangedFloodIsDebounced has a server send list_changed a
// thousand times a second for two seconds: the gateway lists its tools a
// few times, not once per notification, and knows the last change
// (synctest's clock).
func TestListChangedFloodIsDebounced(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var lists atomic.Int64
		hooks := &mcpserver.Hooks{}
		hooks.AddBeforeListTools(func(context.Context, any, *mcp.ListToolsRequest) { lists.Add(1) })
		srv := mcpserver.NewMCPServer("flood", "1.0.0", mcpserver.WithToolCapabilities(true), mcpserver.WithHooks(hooks))
		srv.AddTool(mcp.NewTool("t0"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
		g := New(mcpconfig.ServerConfig{Name: "flood", Transport: mcpconfig.TransportHTTP, URL: "http://in-process/mcp", Enabled: true}, nil)
		g.shared.conns[0].SetDialer(dialInProcess(g.shared.conns[0], func() mcptransport.Interface { return mcptransport.NewInProcessTransport(srv) }))
		defer func() { _ = g.Close() }()
		if _, err := g.List(t.Context()); err != nil {
			t.Fatal(err)
		}
		before := lists.Load()
		const sent = 2000
		for range sent {
			srv.SendNotificationToAllClients(string(mcp.MethodNotificationToolsListChanged), nil)
			time.Sleep(time.Millisecond)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		got := lists.Load() - before
		if max := int64(2*time.Second/relistEvery + 3); got > max {
			t.Errorf("%d list_changed in 2 s made %d tools/list, want at most %d", sent, got, max)
		}
		if got == 0 {
			t.Error("list_changed made no tools/list")
		}
		_, fresh := g.shared.current()
		if !fresh {
			t.Error("after the flood the tool cache is stale: the last change was not listed")
		}
	})
}
