package stream

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/web"
)

// readUntilClose reads a socket's messages until it ends, on a goroutine
// of its own (a client must read to answer a close frame): the types of
// the envelopes it got, and the close status.
func readUntilClose(ctx context.Context, conn *websocket.Conn) <-chan wsEnd {
	out := make(chan wsEnd, 1)
	go func() {
		var end wsEnd
		for {
			_, b, err := conn.Read(ctx)
			if err != nil {
				end.status = websocket.CloseStatus(err)
				out <- end
				return
			}
			var env struct {
				Type    string `json:"type"`
				Payload struct {
					Text string `json:"text"`
				} `json:"payload"`
			}
			if json.Unmarshal(b, &env) == nil {
				end.types = append(end.types, env.Type)
				if env.Type == "error" {
					end.errText = env.Payload.Text
				}
			}
		}
	}()
	return out
}

type wsEnd struct {
	types   []string
	errText string
	status  websocket.StatusCode
}

// routeSetSocket is a web.RouteSet with a socket of its own, as elysiaapi's
// /ws/process_collection, tracked for Drain through the web.Kit.
func routeSetSocket(k *web.Kit) {
	k.Handle(http.MethodGet, "/ws/extra", k.RequireKey, func(c *gin.Context) {
		conn, accepted := k.AcceptWS(c)
		if !accepted {
			return
		}
		defer func() { _ = conn.CloseNow() }()
		defer k.TrackSocket(conn)()
		for {
			if _, _, err := conn.Read(c.Request.Context()); err != nil {
				return
			}
		}
	})
}

// TestDrainTellsStreams drains a server with a query running over SSE, one
// over a WebSocket, an idle query socket and a route set's socket: each
// query's stream ends with an error event saying the service is shutting
// down and completed, every socket is closed with 1001, and Drain returns
// once they are. A socket opened afterwards is closed with 1001 at once.
func TestDrainTellsStreams(t *testing.T) {
	h := newHarness(t, &web.Options{Routes: []web.RouteSet{routeSetSocket}})
	ts, _ := startServerClosing(t, h)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()

	resp := postQuery(t, ctx, ts, "/query/alice/c1", `{"query":"block","query_id":"q1"}`)
	<-h.runner.started
	conn := dialWS(t, ctx, ts, nil)
	wsSend(t, ctx, conn, `{"user_id":"alice","conversation_id":"c2","query_id":"q2","query":"block"}`)
	<-h.runner.started
	idle := dialWS(t, ctx, ts, nil)
	coll, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.URL, "http")+"/ws/extra", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = coll.CloseNow() })
	ends := map[string]<-chan wsEnd{"query socket": readUntilClose(ctx, conn), "idle socket": readUntilClose(ctx, idle),
		"collection socket": readUntilClose(ctx, coll)}

	drained := make(chan error, 1)
	go func() { drained <- h.srv.Drain(ctx) }()

	msgs := readSSE(t, resp)
	var types []string
	for _, m := range msgs {
		var env struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal([]byte(m), &env)
		types = append(types, env.Type)
	}
	if n := len(types); n < 2 || types[n-2] != "error" || types[n-1] != "completed" || !strings.Contains(msgs[n-2], "shutting down") {
		t.Errorf("SSE stream after Drain: %q, want it to end with an error saying the service is shutting down, then completed", msgs)
	}
	for name, ch := range ends {
		end := <-ch
		if end.status != websocket.StatusGoingAway {
			t.Errorf("%s ended with status %d, want %d (going away)", name, end.status, websocket.StatusGoingAway)
		}
		if name != "query socket" {
			continue
		}
		if n := len(end.types); n < 2 || end.types[n-2] != "error" || end.types[n-1] != "completed" || !strings.Contains(end.errText, "shutting down") {
			t.Errorf("query socket after Drain: %v (error %q), want it to end with an error saying the service is shutting down, then completed",
				end.types, end.errText)
		}
	}
	if err := <-drained; err != nil {
		t.Errorf("Drain = %v, want nil once every socket closed", err)
	}

	late := dialWS(t, ctx, ts, nil)
	if end := <-readUntilClose(ctx, late); end.status != websocket.StatusGoingAway {
		t.Errorf("a socket opened after Drain ended with status %d, want %d", end.status, websocket.StatusGoingAway)
	}
}
