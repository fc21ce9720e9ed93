package mcpendpoint

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

// relayUnsubscribe tells the other replicas that session sid unsubscribed
// from uri, for the one holding that subscription.
func (e *Endpoint) relayUnsubscribe(sid, uri string) {
	if e.opts.Relay == nil || e.opts.Sessions == nil || sid == "" {
		return
	}
	if err := e.publish(envelope{Kind: relayUnsubscribe, Session: idHash(sid), URI: uri}); err != nil {
		e.logger.Warn("relaying a resources/unsubscribe to the other replicas", logKeyErr, err)
	}
}

// notifyUpdated sends notifications/resources/updated of uri to session
// sid of user: on its GET stream here, or through the Relay to the
// replica where that stream is open.
func (e *Endpoint) notifyUpdated(sid, user, uri string) {
	if e.opts.Relay != nil && e.opts.Sessions != nil && !e.sessions.Streaming(sid, user) {
		if e.publish(envelope{Kind: relayUpdated, Session: idHash(sid), URI: uri}) == nil {
			return
		}
	}
	_ = e.srv.SendNotificationToSpecificClient(sid, string(mcp.MethodNotificationResourceUpdated), // a gone client misses it
		map[string]any{"uri": uri})
}

// receiveUpdated puts a resource update another replica relayed
// (relayUpdated) to the client, if the session's GET stream is open here.
func (e *Endpoint) receiveUpdated(m *envelope) {
	id := e.sessions.ByHash(m.Session)
	if user, ok := e.sessions.Owner(id); ok && e.sessions.Streaming(id, user) {
		_ = e.srv.SendNotificationToSpecificClient(id, string(mcp.MethodNotificationResourceUpdated), // a gone client misses it
			map[string]any{"uri": m.URI})
	}
}

// receiveUnsubscribe ends at the server a subscription of a session open
// here that its client unsubscribed through another replica
// (relayUnsubscribe), on a goroutine of the endpoint.
func (e *Endpoint) receiveUnsubscribe(m *envelope) {
	if id := e.sessions.ByHash(m.Session); id != "" {
		e.subs.wg.Go(func() { e.unsubscribeSession(context.Background(), id, m.URI) })
	}
}

// serveAnswer serves a POST of session q.sid that carries the client's
// answer to a server's request (a JSON-RPC response): mcp-go delivers it
// when the request waits here, else it goes to the other replicas and the
// client gets 202. It reports whether it served q.
func (e *Endpoint) serveAnswer(w http.ResponseWriter, q *request) bool {
	if e.opts.Relay == nil || q.sid == "" || q.msg == nil || !q.msg.IsResponse() {
		return false
	}
	id, body := q.sid, q.body
	local, mine, elsewhere := e.untagAnswer(q.body, q.msg)
	if elsewhere { // another replica's request: no use asking mcp-go here
		if err := e.publish(envelope{Kind: relayAnswer, Session: idHash(id), Body: body}); err != nil {
			writeRPCError(w, http.StatusServiceUnavailable, mcp.INTERNAL_ERROR, "the answer could not be passed to the replica that asked: answer again")
			return true
		}
		w.WriteHeader(http.StatusAccepted)
		return true
	}
	r := q.r
	r.Body = io.NopCloser(bytes.NewReader(local))
	r.ContentLength = int64(len(local))
	rec := &recordWriter{h: w.Header()}
	e.http.ServeHTTP(rec, r)
	if !mine && rec.code == http.StatusBadRequest && bytes.Contains(rec.body.Bytes(), []byte(notPending)) {
		if err := e.publish(envelope{Kind: relayAnswer, Session: idHash(id), Body: body}); err == nil {
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
func (e *Endpoint) receiveAnswer(m *envelope) {
	id := e.sessions.ByHash(m.Session)
	user, ok := e.sessions.Owner(id)
	if !ok {
		return
	}
	msg, ok := jsonrpc.Decode(m.Body)
	if !ok || !msg.IsResponse() {
		return
	}
	body, _, elsewhere := e.untagAnswer(m.Body, msg)
	if elsewhere {
		return // another replica's request
	}
	e.replay(mcpgateway.WithUser(context.Background(), user), http.MethodPost, id, "", body)
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
