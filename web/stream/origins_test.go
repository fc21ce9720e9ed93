package stream

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/elysia-go/elysia/web"
	"github.com/elysia-go/elysia/web/browsersafety"
)

func mustOrigins(tb testing.TB, s string) []string {
	tb.Helper()
	o, err := browsersafety.ParseOrigins(s)
	if err != nil {
		tb.Fatal(err)
	}
	return o
}

// TestWebSocketOrigins opens real WebSockets: the service's own origin and
// an allowed one may, a foreign one may not, and its query never runs.
func TestWebSocketOrigins(t *testing.T) {
	tests := []struct {
		name    string
		allowed string // ELYSIA_ALLOWED_ORIGINS
		origin  string // "" means the server's own
		want    int
	}{
		{"own origin", "", "", http.StatusSwitchingProtocols},
		{"no Origin", "", "-", http.StatusSwitchingProtocols},
		{"foreign", "", "http://evil.example", http.StatusForbidden},
		{"allowed", "https://app.example.com", "https://app.example.com", http.StatusSwitchingProtocols},
		{"allowed by pattern", "*.trusted.test", "http://ui.trusted.test", http.StatusSwitchingProtocols},
		{"not allowed", "https://app.example.com", "https://other.example.com", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := newHarness(t, &web.Options{AllowedOrigins: mustOrigins(t, tt.allowed)})
			ts := startServer(t, hs)
			ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
			defer cancel()
			hdr := http.Header{}
			switch tt.origin {
			case "":
				hdr.Set("Origin", ts.URL)
			case "-":
			default:
				hdr.Set("Origin", tt.origin)
			}
			url := "ws" + strings.TrimPrefix(ts.URL, "http") + "/ws/query"
			conn, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: hdr})
			if resp == nil {
				t.Fatalf("dial: %v", err)
			}
			if resp.StatusCode != tt.want {
				t.Fatalf("handshake status %d, want %d (%v)", resp.StatusCode, tt.want, err)
			}
			if err != nil {
				return
			}
			defer func() { _ = conn.CloseNow() }() // the test is over
			wsSend(t, ctx, conn, `{"user_id": "alice", "conversation_id": "c1", "query_id": "q1", "query": "hi"}`)
			if env := decodeEnvelope(t, wsRead(t, ctx, conn)); env.QueryID != "q1" {
				t.Errorf("first envelope %+v, want one of q1", env)
			}
		})
	}
}
