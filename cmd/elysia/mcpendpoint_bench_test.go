package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"slices"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// BenchmarkMCPEndpointCall measures what the aggregate endpoint adds to a
// tool call: an echo tool of an MCP server in this process, over
// Streamable HTTP on loopback, called directly and through `elysia serve`'s
// /mcp (which calls it over the same kind of connection). It reports the
// median of each and their difference:
//
//	go test -run '^$' -bench BenchmarkMCPEndpointCall -benchtime 2000x ./cmd/elysia/
func BenchmarkMCPEndpointCall(b *testing.B) {
	up := mcpserver.NewMCPServer("echo", "1")
	up.AddTool(mcp.NewTool("echo", mcp.WithString("message")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(req.GetString("message", "")), nil
	})
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(up, mcpserver.WithDisableLocalhostProtection(true)))
	b.Cleanup(hs.Close)
	s := startService(b, serveOptions{Config: fmt.Sprintf(`{"servers": {"echo": {"type": "http", "url": %q}}}`, hs.URL+"/mcp"),
		Args: append([]string{"--log-level", "warn"}, benchProfileArgs()...)})

	connect := func(url string) *mcpclient.Client {
		c, err := mcpclient.NewStreamableHttpClient(url)
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
		return c
	}
	direct, via := connect(hs.URL+"/mcp"), connect(s.URL+"/mcp")
	callOnce := func(c *mcpclient.Client, name string) time.Duration {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, map[string]any{"message": "hello"}
		start := time.Now()
		res, err := c.CallTool(b.Context(), req)
		d := time.Since(start)
		if err != nil || res.IsError {
			b.Fatalf("call %s: %v %+v", name, err, res)
		}
		return d
	}
	for range 50 { // warm up: connections, sessions, the gateway's tool cache
		callOnce(direct, "echo")
		callOnce(via, "echo__echo")
	}
	var ds, vs []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		// Alternate, so that both see the same machine load.
		ds = append(ds, callOnce(direct, "echo"))
		vs = append(vs, callOnce(via, "echo__echo"))
	}
	b.StopTimer()
	median := func(x []time.Duration) time.Duration { slices.Sort(x); return x[len(x)/2] }
	md, mv := median(ds), median(vs)
	b.ReportMetric(float64(md.Microseconds()), "direct-median-µs")
	b.ReportMetric(float64(mv.Microseconds()), "endpoint-median-µs")
	b.ReportMetric(float64((mv - md).Microseconds()), "added-median-µs")
}

// benchProfileArgs profiles the service to $ELYSIA_BENCH_CPUPROFILE when set.
func benchProfileArgs() []string {
	if p := os.Getenv("ELYSIA_BENCH_CPUPROFILE"); p != "" {
		return []string{"--cpuprofile", p}
	}
	return nil
}
