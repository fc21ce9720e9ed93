package session

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// TestServerLogMaskedBeforeCut checks that a server's log message with a
// secret across the point where it is cut keeps no part of the secret.
func TestServerLogMaskedBeforeCut(t *testing.T) {
	t.Parallel()
	const secret = "SECRET-0123456789"
	cfg := mcpconfig.ServerConfig{Name: "s", Secrets: []string{secret}}
	c := New(cfg, Options{}, slog.New(slog.DiscardHandler), cfg.Masker())
	data := strings.Repeat("x", maxLogData-6) + secret
	n := mcp.JSONRPCNotification{}
	n.Params.AdditionalFields = map[string]any{"level": "info", "data": data}
	c.logged(newSession("stdio"), n)
	for _, e := range c.logs.Last(LogLines) {
		if strings.Contains(e.Data, "SECRET") {
			t.Errorf("kept log data holds part of a secret: ...%s", e.Data[len(e.Data)-20:])
		}
	}
}
