package mcpgateway

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// TestStdioMessageOverCapFailsTheServer: a stdio server answers with one
// 50 MB line. mcp-go reads a line whole, without a limit, and once grew the
// service by about five times the line; now the line is cut off at
// max_message_size (default 4 MiB): the call fails saying so, last_error
// says so, the service allocates a few times the cap at most, the other
// server keeps answering and the failing one answers again with a new
// process.
func TestStdioMessageOverCapFailsTheServer(t *testing.T) {
	// Not parallel: it measures the process's allocations.
	const size = 50 << 20
	healthy := healthyGateway(t)
	db := tempDB(t)
	seed(t, db, "saved before the flood")
	g := newGateway(t, faultConfig(t, db), nil)
	assertListed(t, g, "saved before the flood")
	pid := g.Status().PID

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var cr *CallResult
	var err error
	whileFaulting(t, healthy, func() {
		cr, err = g.Execute(t.Context(), "fault", map[string]any{"mode": "big", "size": size})
	})
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatalf("a 50 MB answer was taken (%d bytes of text), want it refused over max_message_size", len(cr.Text()))
	}
	assertNamesServer(t, err, faultyName, "sent a message over the 4 MiB limit", "max_message_size")
	if !errors.Is(err, session.ErrMessageTooLarge) {
		t.Errorf("error %v does not match ErrMessageTooLarge", err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d MiB while the server sent a 50 MB line", alloc>>20)
	if alloc > 6*mcpconfig.DefaultMaxMessageSize {
		t.Errorf("the service allocated %d MiB reading a 50 MB line, want at most %d MiB (6 × max_message_size)",
			alloc>>20, 6*mcpconfig.DefaultMaxMessageSize>>20)
	}
	if st := g.Status(); !strings.Contains(st.LastError, "over the 4 MiB limit") {
		t.Errorf("last_error = %q, want it to say the message was over the limit", st.LastError)
	}
	assertListed(t, g, "saved before the flood")
	if g.Status().PID == pid {
		t.Errorf("the session that sent the oversized message is still in use (pid %d)", pid)
	}
}

// TestStdioMessageSizeConfigurable: max_message_size raises the cap for a
// server whose answers are big by design, and lowers it: a line of exactly
// the cap passes, one byte more does not.
func TestStdioMessageSizeConfigurable(t *testing.T) {
	t.Parallel()
	cfg := faultConfig(t, tempDB(t))
	cfg.MaxMessageSize = 64 << 10
	g := newGateway(t, cfg, nil)
	// The answer's JSON-RPC envelope is about 100 bytes on top of the text.
	if _, err := g.Execute(t.Context(), "fault", map[string]any{"mode": "big", "size": 60 << 10}); err != nil {
		t.Fatalf("an answer under max_message_size: %v", err)
	}
	_, err := g.Execute(t.Context(), "fault", map[string]any{"mode": "big", "size": 64 << 10})
	assertNamesServer(t, err, faultyName, "over the 64 KiB limit")
}

// TestStdioMessageOverCapAtConnect: a server that floods stdout before the
// handshake fails to connect at once, saying why, not at connect_timeout.
func TestStdioMessageOverCapAtConnect(t *testing.T) {
	t.Parallel()
	cfg := mcpconfig.ServerConfig{Name: "flood", Transport: mcpconfig.TransportStdio, Command: "sh", Enabled: true,
		Args: []string{"-c", `head -c 20000000 /dev/zero | tr '\0' x; sleep 60`}, ConnectTimeout: 20 * time.Second}
	g := newGateway(t, cfg, nil)
	start := time.Now()
	_, err := g.List(t.Context())
	assertNamesServer(t, err, "flood", "connect", "sent a message over the 4 MiB limit")
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("failing took %v", d)
	}
}
