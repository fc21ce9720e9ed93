package mcpendpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
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
// mcp-go's client decoding the answer. The client keeps its GET stream
// open, as the TypeScript and Python SDKs' clients do:
//
//	go test -run '^$' -bench BenchmarkToolsList100Servers ./mcpendpoint/
func BenchmarkToolsList100Servers(b *testing.B) {
	ep := hundredServers(b)
	hs := httptest.NewServer(httpHandler(ep))
	b.Cleanup(hs.Close)
	b.Cleanup(func() { _ = ep.Close(context.Background()) })
	c, err := mcpclient.NewStreamableHttpClient(hs.URL+"/mcp", mcptransport.WithContinuousListening())
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
	waitStreaming(b, ep, c.GetSessionId())
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

// BenchmarkToolsList100ServersHTTP is the endpoint's part of it over HTTP:
// the POST of a session whose GET stream is open, on loopback, its answer
// read but not decoded.
func BenchmarkToolsList100ServersHTTP(b *testing.B) {
	ep := hundredServers(b)
	hs := httptest.NewServer(httpHandler(ep))
	b.Cleanup(hs.Close)
	b.Cleanup(func() { _ = ep.Close(context.Background()) })
	c, err := mcpclient.NewStreamableHttpClient(hs.URL+"/mcp", mcptransport.WithContinuousListening())
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Start(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	ireq := mcp.InitializeRequest{}
	ireq.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	if _, err := c.Initialize(b.Context(), ireq); err != nil {
		b.Fatal(err)
	}
	sid := c.GetSessionId()
	waitStreaming(b, ep, sid)
	post := func() int {
		req, _ := http.NewRequestWithContext(b.Context(), http.MethodPost, hs.URL+"/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return int(n)
	}
	if n := post(); n < 100_000 { // lists every server once
		b.Fatalf("first list: %d bytes", n)
	}
	for b.Loop() {
		post()
	}
}

// BenchmarkToolsList100ServersHandle is the endpoint's own part without
// HTTP: the answer built from the encoded catalog (Streamable HTTP with a
// GET stream, stdio), and mcp-go's (legacy SSE, HTTP without a GET
// stream).
func BenchmarkToolsList100ServersHandle(b *testing.B) {
	ep := hundredServers(b)
	ctx := mcpgateway.WithUser(b.Context(), "alice")
	msg := json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if _, err := json.Marshal(ep.srv.HandleMessage(ctx, msg)); err != nil { // lists every server once
		b.Fatal(err)
	}
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			if _, ok := ep.fastList(ctx, "alice", msg); !ok {
				b.Fatal("not answered")
			}
		}
	})
	b.Run("mcp-go", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(ep.srv.HandleMessage(ctx, msg)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// waitStreaming waits until session sid's GET stream is open.
func waitStreaming(b *testing.B, ep *Endpoint, sid string) {
	b.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ep.sessions.streaming(sid, "alice") {
		if time.Now().After(deadline) {
			b.Fatal("the client's GET stream never opened")
		}
		time.Sleep(5 * time.Millisecond) // polling, bounded by the deadline
	}
}
