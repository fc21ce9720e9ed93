package stream

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/web"
)

// TestQueryAuth: a query runs only for the key's user (or an admin's),
// and the WebSocket needs a key.
func TestQueryAuth(t *testing.T) {
	h := newHarness(t, &web.Options{Keys: testKeys})
	const alice, bob, none = "key-alice", "key-bob", ""
	for _, tt := range []struct {
		method, path, body, key string
		want                    int
	}{
		{"POST", "/query/alice/c1", `{"query": "busy"}`, bob, 403},
		{"POST", "/query/alice/c1", `{"query": "busy"}`, alice, 409},
		{"GET", "/ws/query", "", none, 401},
		{"GET", "/events/alice", "", bob, 403},
		{"POST", "/elicitations/e1", `{"action": "accept"}`, none, 401},
	} {
		var headers []string
		if tt.key != "" {
			headers = []string{"Authorization", "Bearer " + tt.key}
		}
		if rec := h.do(t, tt.method, tt.path, tt.body, headers...); rec.Code != tt.want {
			t.Errorf("%s %s with %q: status = %d, want %d; body %s", tt.method, tt.path, tt.key, rec.Code, tt.want, rec.Body)
		}
	}
}

func TestWebSocketAuth(t *testing.T) {
	h := newHarness(t, &web.Options{Keys: testKeys})
	ts := startServer(t, h)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	url := "ws" + strings.TrimPrefix(ts.URL, "http") + "/ws/query"

	t.Run("no key", func(t *testing.T) {
		_, resp, err := websocket.Dial(ctx, url, nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("dial without key: err %v, resp %v", err, resp)
		}
	})
	t.Run("subprotocol", func(t *testing.T) {
		conn := dialWS(t, ctx, ts, &websocket.DialOptions{Subprotocols: []string{"bearer.key-alice"}})
		if got := conn.Subprotocol(); got != "bearer.key-alice" {
			t.Errorf("subprotocol = %q, want it echoed", got)
		}
		wsSend(t, ctx, conn, `{"user_id": "bob", "conversation_id": "c1", "query_id": "q1", "query": "hi"}`)
		env := decodeEnvelope(t, wsRead(t, ctx, conn))
		if env.Type != tools.EventError || string(env.Payload) != `{"text":"API key may not act for user \"bob\""}` {
			t.Errorf("other user's message: %s %s", env.Type, env.Payload)
		}
		wsSend(t, ctx, conn, `{"user_id": "alice", "conversation_id": "c1", "query_id": "q1", "query": "hi"}`)
		if env := decodeEnvelope(t, wsRead(t, ctx, conn)); env.Type != tools.EventStatus || env.UserID != "alice" {
			t.Errorf("own message: %s for %s", env.Type, env.UserID)
		}
	})
	t.Run("bad subprotocol key", func(t *testing.T) {
		_, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{"bearer.nope"}})
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("dial with a bad key: err %v, resp %v", err, resp)
		}
	})
	t.Run("header", func(t *testing.T) {
		conn := dialWS(t, ctx, ts, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer key-admin"}}})
		wsSend(t, ctx, conn, `{"user_id": "bob", "conversation_id": "c1", "query_id": "q1", "query": "hi"}`)
		if env := decodeEnvelope(t, wsRead(t, ctx, conn)); env.Type != tools.EventStatus {
			t.Errorf("admin acting for bob: %s %s", env.Type, env.Payload)
		}
	})
}
