package mcpendpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// hundredServers is an endpoint in tools mode over 100 servers of 10
// tools each, in this process over Streamable HTTP.
func hundredServers(b *testing.B) *Endpoint {
	b.Helper()
	src := &source{expose: mcpconfig.DefaultExpose()}
	src.expose.Mode = mcpconfig.ExposeTools
	for i := range 100 {
		s := mcpserver.NewMCPServer("up", "1")
		for j := range 10 {
			s.AddTool(mcp.NewTool(fmt.Sprintf("tool_%d", j), mcp.WithDescription("a tool of the benchmark"), mcp.WithString("q")),
				func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return mcp.NewToolResultText("ok"), nil
				})
		}
		hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(s, mcpserver.WithDisableLocalhostProtection(true)))
		b.Cleanup(hs.Close)
		g := mcpgateway.New(mcpconfig.ServerConfig{Name: fmt.Sprintf("s%03d", i), Transport: mcpconfig.TransportHTTP,
			URL: hs.URL + "/mcp", Enabled: true, ConnectTimeout: 5 * time.Second, CallTimeout: 5 * time.Second}, nil)
		b.Cleanup(func() { _ = g.Close() })
		src.gws = append(src.gws, g)
	}
	return New(src, nil)
}

// BenchmarkToolsList100Servers measures a client's tools/list over 100
// servers of 10 tools each once their tools are cached, over HTTP with
// mcp-go's client decoding the answer:
//
//	go test -run '^$' -bench BenchmarkToolsList100Servers ./mcpendpoint/
func BenchmarkToolsList100Servers(b *testing.B) {
	ep := hundredServers(b)
	hs := httptest.NewServer(httpHandler(ep))
	b.Cleanup(hs.Close)
	c, err := mcpclient.NewStreamableHttpClient(hs.URL + "/mcp")
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Start(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	if _, err := c.Initialize(b.Context(), req); err != nil {
		b.Fatal(err)
	}
	res, err := c.ListTools(b.Context(), mcp.ListToolsRequest{}) // lists every server once
	if err != nil || len(res.Tools) != 1000 {
		b.Fatalf("first list: %v, %d tools", err, len(res.Tools))
	}
	for b.Loop() {
		if _, err := c.ListTools(b.Context(), mcp.ListToolsRequest{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkToolsList100ServersHandle is the endpoint's own part of it: the
// tools/list message handled and its answer encoded, without HTTP or a
// client.
func BenchmarkToolsList100ServersHandle(b *testing.B) {
	ep := hundredServers(b)
	ctx := mcpgateway.WithUser(b.Context(), "alice")
	msg := json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if _, err := json.Marshal(ep.srv.HandleMessage(ctx, msg)); err != nil { // lists every server once
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := json.Marshal(ep.srv.HandleMessage(ctx, msg)); err != nil {
			b.Fatal(err)
		}
	}
}
