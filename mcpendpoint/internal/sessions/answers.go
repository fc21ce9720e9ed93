package sessions

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpendpoint/internal/jsonrpc"
	"github.com/elysia-go/elysia/mcpgateway"
)

// A server's request to the client during a call (elicitation, sampling,
// roots) waits on the replica that serves the call, and the client's
// answer is a POST of its own, which a load balancer may send to another
// replica: there mcp-go finds no request waiting, and the answer goes to
// the other replicas through the Relay, one of which delivers it.

// notPending is what mcp-go (v1.2.1) answers, with 400, to a client's
// answer no request of the session waits for here.
const notPending = "No pending sampling request found"

// RelayUnsubscribe tells the other replicas that session sid unsubscribed
// from uri, for the one holding that subscription.
func (h *Hub) RelayUnsubscribe(sid, uri string) {
	if h.Relay == nil || h.Sessions == nil || sid == "" {
		return
	}
	if err := h.publish(Message{Kind: relayUnsubscribe, Session: idHash(sid), URI: uri}); err != nil {
		h.Logger.Warn("relaying a resources/unsubscribe to the other replicas", logKeyErr, err)
	}
}

// NotifyUpdated sends notifications/resources/updated of uri to session
// sid of user: on its GET stream here, or through the Relay to the
// replica where that stream is open.
func (h *Hub) NotifyUpdated(sid, user, uri string) {
	if h.Relay != nil && h.Sessions != nil && !h.Book.Streaming(sid, user) {
		if h.publish(Message{Kind: relayUpdated, Session: idHash(sid), URI: uri}) == nil {
			return
		}
	}
	_ = h.srv.SendNotificationToSpecificClient(sid, string(mcp.MethodNotificationResourceUpdated), // a gone client misses it
		map[string]any{"uri": uri})
}

// receiveUpdated puts a resource update another replica relayed
// (relayUpdated) to the client, if the session's GET stream is open here.
func (h *Hub) receiveUpdated(m *Message) {
	id := h.Book.ByHash(m.Session)
	if user, ok := h.Book.Owner(id); ok && h.Book.Streaming(id, user) {
		_ = h.srv.SendNotificationToSpecificClient(id, string(mcp.MethodNotificationResourceUpdated), // a gone client misses it
			map[string]any{"uri": m.URI})
	}
}

// receiveUnsubscribe ends at the server a subscription of a session open
// here that its client unsubscribed through another replica
// (relayUnsubscribe), on a goroutine of Config.Go.
func (h *Hub) receiveUnsubscribe(m *Message) {
	if id := h.Book.ByHash(m.Session); id != "" {
		h.Go(func() { h.unsubscribeSession(context.Background(), id, m.URI) })
	}
}

// ServeAnswer serves a POST of session q.SID that carries the client's
// answer to a server's request (a JSON-RPC response): mcp-go delivers it
// when the request waits here, else it goes to the other replicas and the
// client gets 202. It reports whether it served q.
func (h *Hub) ServeAnswer(w http.ResponseWriter, q *Request) bool {
	if h.Relay == nil || q.SID == "" || q.Msg == nil || !q.Msg.IsResponse() {
		return false
	}
	id, body := q.SID, q.Body
	local, mine, elsewhere := h.untagAnswer(q.Body, q.Msg)
	if elsewhere { // another replica's request: no use asking mcp-go here
		if err := h.publish(Message{Kind: relayAnswer, Session: idHash(id), Body: body}); err != nil {
			jsonrpc.WriteError(w, http.StatusServiceUnavailable, mcp.INTERNAL_ERROR, "the answer could not be passed to the replica that asked: answer again")
			return true
		}
		w.WriteHeader(http.StatusAccepted)
		return true
	}
	r := q.R
	r.Body = io.NopCloser(bytes.NewReader(local))
	r.ContentLength = int64(len(local))
	rec := &recordWriter{h: w.Header()}
	h.http.ServeHTTP(rec, r)
	if !mine && rec.code == http.StatusBadRequest && bytes.Contains(rec.body.Bytes(), []byte(notPending)) {
		if err := h.publish(Message{Kind: relayAnswer, Session: idHash(id), Body: body}); err == nil {
			w.Header().Del("Content-Type")
			w.WriteHeader(http.StatusAccepted)
			return true
		}
	}
	if rec.code != 0 {
		w.WriteHeader(rec.code)
	}
	_, _ = w.Write(rec.body.Bytes()) // a client gone: nothing to tell
	return true
}

// receiveAnswer hands a client's answer another replica relayed
// (relayAnswer) to mcp-go, under the session's user, if the session is
// open here; a request of it may wait here.
func (h *Hub) receiveAnswer(m *Message) {
	id := h.Book.ByHash(m.Session)
	user, ok := h.Book.Owner(id)
	if !ok {
		return
	}
	msg, ok := jsonrpc.Decode(m.Body)
	if !ok || !msg.IsResponse() {
		return
	}
	body, _, elsewhere := h.untagAnswer(m.Body, msg)
	if elsewhere {
		return // another replica's request
	}
	h.replay(mcpgateway.WithUser(context.Background(), user), http.MethodPost, id, "", body)
}

// recordWriter keeps what mcp-go answers to a client's answer; its header
// is the real response's.
type recordWriter struct {
	h    http.Header
	code int
	body bytes.Buffer
}

func (w *recordWriter) Header() http.Header { return w.h }

func (w *recordWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.body.Write(b)
}

func (w *recordWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}
