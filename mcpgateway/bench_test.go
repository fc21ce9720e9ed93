package mcpgateway

import (
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// BenchmarkExecute compares an execute through the Gateway (schema
// validation, session lookup, result conversion) with the same tools/call
// made directly with an mcp-go client, on the same todo-mcp server.
func BenchmarkExecute(b *testing.B) {
	for _, transport := range []string{"stdio", "http"} {
		b.Run(transport, func(b *testing.B) {
			var cfg mcpconfig.ServerConfig
			if transport == "stdio" {
				cfg = mcpconfig.ServerConfig{Name: "todo", Transport: mcpconfig.TransportStdio, Command: testenv.TodoMCP(b), Enabled: true,
					Env: map[string]string{"TODO_DB": filepath.Join(b.TempDir(), "todos.db")}}
			} else {
				cfg = mcpconfig.ServerConfig{Name: "todo", Transport: mcpconfig.TransportHTTP, URL: testenv.TodoHTTP(b, "http"), Enabled: true}
			}
			inputs := map[string]any{"status": "active"}
			b.Run("gateway", func(b *testing.B) {
				g := New(cfg, nil)
				b.Cleanup(func() { _ = g.Close() })
				if _, err := g.Execute(b.Context(), "list_todos", inputs); err != nil {
					b.Fatal(err)
				}
				call := func() {
					if _, err := g.Execute(b.Context(), "list_todos", inputs); err != nil {
						b.Error(err)
					}
				}
				runBench(b, call)
			})
			b.Run("direct", func(b *testing.B) {
				c := directClient(b, cfg)
				req := mcp.CallToolRequest{}
				req.Params.Name = "list_todos"
				req.Params.Arguments = inputs
				call := func() {
					if _, err := c.CallTool(b.Context(), req); err != nil {
						b.Error(err)
					}
				}
				runBench(b, call)
			})
		})
	}
}

func runBench(b *testing.B, call func()) {
	b.Helper()
	b.Run("seq", func(b *testing.B) {
		for b.Loop() {
			call()
		}
	})
	b.Run("par8", func(b *testing.B) {
		// 8 concurrent callers whatever GOMAXPROCS is.
		b.SetParallelism(max(1, 8/maxProcs()))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				call()
			}
		})
	})
}

func directClient(b *testing.B, cfg mcpconfig.ServerConfig) *mcpclient.Client {
	b.Helper()
	var t mcptransport.Interface
	if cfg.Transport == mcpconfig.TransportStdio {
		t = mcptransport.NewStdio(cfg.Command, append(os.Environ(), "TODO_DB="+cfg.Env["TODO_DB"]))
	} else {
		var err error
		t, err = mcptransport.NewStreamableHTTP(cfg.URL, mcptransport.WithHTTPBasicClient(&http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}))
		if err != nil {
			b.Fatal(err)
		}
	}
	c := mcpclient.NewClient(t)
	if err := c.Start(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
	if _, err := c.Initialize(b.Context(), req); err != nil {
		b.Fatal(err)
	}
	return c
}

func maxProcs() int { return runtime.GOMAXPROCS(0) }
