package mcpauth

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// TestFlowWaitEndsWithCtx checks that a call waiting for another's refresh
// or sign-in (which may take the user's time in a browser) gives up when
// its own ctx ends.
func TestFlowWaitEndsWithCtx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := mcpconfig.ServerConfig{Name: "s", Transport: mcpconfig.TransportHTTP, URL: "https://mcp.example/mcp"}
		a := NewAuthorizer(cfg, "alice", &MemoryTokenStore{}, nil, slog.New(slog.DiscardHandler))
		if err := a.LockFlow(t.Context()); err != nil {
			t.Fatal(err)
		}
		defer a.UnlockFlow()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		used := &Token{AccessToken: "old", RefreshToken: "r"}
		if _, err := a.refreshed(ctx, used); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("refreshed while another holds the flow: err = %v, want %v", err, context.DeadlineExceeded)
		}
	})
}
