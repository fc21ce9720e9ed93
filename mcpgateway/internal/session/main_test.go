package session

import (
	"context"
	"os"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.uber.org/goleak"
)

// modernStdioEnv, set in a child's environment, makes the test binary a
// stdio MCP server that speaks only 2026-07-28 (modernTools) instead of
// running the tests.
const modernStdioEnv = "ELYSIA_TEST_MODERN_STDIO"

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) {
	if _, ok := os.LookupEnv(modernStdioEnv); ok {
		serveModernStdio()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// serveModernStdio serves modernTools on stdin and stdout, naming only
// 2026-07-28 in server/discover, until stdin closes.
func serveModernStdio() {
	srv := mcpserver.NewMCPServer("modern", "1.0.0", mcpserver.WithToolCapabilities(true))
	modernTools(srv, new(atomic.Int32))
	s := mcpserver.NewStdioServer(srv)
	mcpserver.WithStdioContextFunc(func(ctx context.Context) context.Context {
		return mcpserver.WithSupportedProtocolVersions(ctx, []string{mcp.ProtocolVersion20260728})
	})(s)
	_ = s.Listen(context.Background(), os.Stdin, os.Stdout)
}
