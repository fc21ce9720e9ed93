package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/internal/testenv"
)

// loggingServer is an MCP server in this process, over HTTP, whose "chatty"
// tool logs one message at each of debug, info and error, then answers
// once release gives it a value (mcp-go may drop a notification that races the
// response on a POST's stream).
func loggingServer(t *testing.T, release <-chan struct{}) string {
	t.Helper()
	s := mcpserver.NewMCPServer("chatty", "1", mcpserver.WithLogging())
	s.AddTool(mcp.NewTool("chatty"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		srv := mcpserver.ServerFromContext(ctx)
		for _, level := range []string{"debug", "info", "error"} {
			_ = srv.SendNotificationToClient(ctx, "notifications/message", map[string]any{"level": level, "logger": "talk", "data": "said at " + level})
		}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return mcp.NewToolResultText("done"), nil
	})
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(s, mcpserver.WithDisableLocalhostProtection(true)))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// TestMCPEndpointLogging: a server's log messages during a call reach the
// MCP client that made it, at the level that client's session set, named
// after the server.
func TestMCPEndpointLogging(t *testing.T) {
	release := make(chan struct{})
	s := startService(t, serveOptions{Config: fmt.Sprintf(`{"expose": {"mode": "tools"}, "servers": {"chatty": {"type": "http", "url": %q}}}`, loggingServer(t, release))})
	// logs calls chatty through a session at level ("" for the default)
	// and returns the log messages it got once it has want of them.
	logs := func(level mcp.LoggingLevel, want int) []string {
		c := capsClient(t, s.URL, mcp.ClientCapabilities{})
		var mu sync.Mutex
		var got []string
		c.OnNotification(func(n mcp.JSONRPCNotification) {
			if n.Method == "notifications/message" {
				mu.Lock()
				got = append(got, fmt.Sprintf("%v %v %v", n.Params.AdditionalFields["level"], n.Params.AdditionalFields["logger"], n.Params.AdditionalFields["data"]))
				mu.Unlock()
			}
		})
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		if level != "" {
			req := mcp.SetLevelRequest{}
			req.Params.Level = level
			//lint:ignore SA1019 logging/setLevel is how a 2025-11-25 client asks
			if err := c.SetLevel(ctx, req); err != nil { //nolint:staticcheck // the 2025-11-25 way to ask
				t.Fatalf("logging/setLevel: %v", err)
			}
		}
		done := make(chan error, 1)
		go func() {
			req := mcp.CallToolRequest{}
			req.Params.Name = "chatty__chatty"
			_, err := c.CallTool(ctx, req)
			done <- err
		}()
		testenv.WaitFor(t, 10*time.Second, "log messages", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(got) >= want
		})
		release <- struct{}{}
		if err := <-done; err != nil {
			t.Fatalf("chatty__chatty: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		return slices.Sorted(slices.Values(got)) // mcp-go's GET and POST streams race
	}
	want := []string{"error chatty/talk said at error", "info chatty/talk said at info"}
	if got := logs(mcp.LoggingLevelInfo, 2); !slices.Equal(got, want) {
		t.Errorf("the session at info got %q, want %q", got, want)
	}
	if got := logs("", 1); !slices.Equal(got, want[:1]) {
		t.Errorf("the session at the default level got %q, want %q", got, want[:1])
	}
}
