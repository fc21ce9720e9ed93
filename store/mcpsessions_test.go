package store

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestMCPSessions: an MCP session kept by one Store is read by another on
// the same database (a replica) for its user only, not once idle, and not
// after it was deleted; neither its id nor its user is in the table in
// clear.
func TestMCPSessions(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			dsn := b.dsn(t)
			var now atomic.Int64
			now.Store(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC).UnixMicro())
			clock := func() time.Time { return time.UnixMicro(now.Load()) }
			a, r := openStore(t, dsn), openStore(t, dsn)
			a.clock, r.clock = clock, clock
			const id, idle = "mcp-session-5be0c81f0a9d4e27b3c6d2e1f7a8b9c0", time.Minute
			m := MCPSession{ProtocolVersion: "2025-11-25", Init: `{"capabilities":{"elicitation":{}}}`}
			if err := a.PutMCPSession(ctx, id, "alice", m, idle); err != nil {
				t.Fatal(err)
			}
			if got, err := r.MCPSession(ctx, id, "alice", idle); err != nil || got != m {
				t.Fatalf("read on the replica: %+v, %v; want %+v", got, err, m)
			}
			if _, err := r.MCPSession(ctx, id, "bob", idle); !errors.Is(err, ErrNotFound) {
				t.Errorf("alice's session read as bob: %v, want ErrNotFound", err)
			}
			if err := r.PutMCPSession(ctx, id, "bob", m, idle); !errors.Is(err, ErrNotFound) {
				t.Errorf("alice's session put as bob: %v, want ErrNotFound", err)
			}
			if err := r.TouchMCPSession(ctx, id, "alice", "debug", idle); err != nil {
				t.Fatal(err)
			}
			if got, _ := a.MCPSession(ctx, id, "alice", idle); got.LogLevel != "debug" {
				t.Errorf("log level %q, want debug", got.LogLevel)
			}
			big := MCPSession{Init: strings.Repeat("x", MaxMCPSessionInit+1)}
			if err := a.PutMCPSession(ctx, "mcp-session-big", "alice", big, idle); err == nil {
				t.Error("initialize params over MaxMCPSessionInit were kept")
			}

			var dump strings.Builder
			rows, err := a.db.QueryContext(ctx, `SELECT id_hash, user_hash, init FROM mcp_sessions`)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var h, u, init string
				if err := rows.Scan(&h, &u, &init); err != nil {
					t.Fatal(err)
				}
				dump.WriteString(h + " " + u + " " + init + "\n")
			}
			_ = rows.Close()
			if strings.Contains(dump.String(), id) || strings.Contains(dump.String(), "alice") {
				t.Errorf("mcp_sessions holds the session id or its user in clear:\n%s", dump.String())
			}

			now.Add((idle + time.Second).Microseconds())
			if _, err := r.MCPSession(ctx, id, "alice", idle); !errors.Is(err, ErrNotFound) {
				t.Errorf("a session idle past %v: %v, want ErrNotFound", idle, err)
			}
			if err := r.TouchMCPSession(ctx, id, "alice", "", idle); !errors.Is(err, ErrNotFound) {
				t.Errorf("touching a session idle past %v: %v, want ErrNotFound", idle, err)
			}
			const id2 = "mcp-session-0c1d2e3f405162738495a6b7c8d9e0f1"
			if err := a.PutMCPSession(ctx, id2, "alice", m, idle); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := a.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM mcp_sessions`).Scan(&n); err != nil || n != 1 {
				t.Errorf("%d sessions kept after a put dropped the idle ones (%v), want 1", n, err)
			}
			if err := r.DeleteMCPSession(ctx, id2, "bob"); !errors.Is(err, ErrNotFound) {
				t.Errorf("alice's session deleted as bob: %v, want ErrNotFound", err)
			}
			if err := r.DeleteMCPSession(ctx, id2, "alice"); err != nil {
				t.Fatal(err)
			}
			if _, err := a.MCPSession(ctx, id2, "alice", idle); !errors.Is(err, ErrNotFound) {
				t.Errorf("a deleted session: %v, want ErrNotFound", err)
			}
		})
	}
}
