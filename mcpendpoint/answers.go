package mcpendpoint

import (
	"bytes"
	"context"
	"encoding/json"
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

// relayAnswer is the kind of the Relay message that carries a client's
// answer to a server's request that waits on no request here.
const relayAnswer = "mcp_client_answer"

// notPending is what mcp-go (v1.2.1) answers, with 400, to a client's
// answer no request of the session waits for here.
const notPending = "No pending sampling request found"

// relayUpdated is the kind of the Relay message that carries a server's
// notifications/resources/updated for a session whose GET stream is not
// open here.
const relayUpdated = "mcp_resource_updated"

// relayUnsubscribe is the kind of the Relay message that carries a
// client's resources/unsubscribe of a subscription not held here.
const relayUnsubscribe = "mcp_resource_unsubscribe"

// relayUnsubscribe tells the other replicas that session sid unsubscribed
// from uri, for the one holding that subscription.
func (e *Endpoint) relayUnsubscribe(sid, uri string) {
	if e.opts.Relay == nil || e.opts.Sessions == nil || sid == "" {
		return
	}
	msg, _ := json.Marshal(relayMsg{Kind: relayUnsubscribe, Session: idHash(sid), URI: uri})
	if err := e.opts.Relay.Publish(msg); err != nil {
		e.logger.Warn("relaying a resources/unsubscribe to the other replicas", logKeyErr, err)
	}
}

// relayMsg is a Relay message of the endpoint: a session that ended
// (relayEnded), a client's answer (relayAnswer, with Body), a resource
// update (relayUpdated, with URI) or unsubscribe (relayUnsubscribe, with
// URI). It names the session by the SHA-256 of
// its id, never by the id.
type relayMsg struct {
	Kind    string          `json:"kind"`
	Session string          `json:"session"`
	Body    json.RawMessage `json:"body,omitempty"`
	URI     string          `json:"uri,omitempty"`
}

// notifyUpdated sends notifications/resources/updated of uri to session
// sid of user: on its GET stream here, or through the Relay to the
// replica where that stream is open.
func (e *Endpoint) notifyUpdated(sid, user, uri string) {
	if e.opts.Relay != nil && e.opts.Sessions != nil && !e.sessions.streaming(sid, user) {
		msg, _ := json.Marshal(relayMsg{Kind: relayUpdated, Session: idHash(sid), URI: uri})
		if e.opts.Relay.Publish(msg) == nil {
			return
		}
	}
	_ = e.srv.SendNotificationToSpecificClient(sid, string(mcp.MethodNotificationResourceUpdated), // a gone client misses it
		map[string]any{"uri": uri})
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
		msg, _ := json.Marshal(relayMsg{Kind: relayAnswer, Session: idHash(id), Body: body})
		if err := e.opts.Relay.Publish(msg); err != nil {
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
		msg, _ := json.Marshal(relayMsg{Kind: relayAnswer, Session: idHash(id), Body: body})
		if err := e.opts.Relay.Publish(msg); err == nil {
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

// deliverAnswer hands a client's answer another replica relayed to
// mcp-go, under the session's user, if the session is open here; a
// request of it may wait here.
func (e *Endpoint) deliverAnswer(id string, body []byte) {
	user, ok := e.sessions.owner(id)
	if !ok {
		return
	}
	m, ok := jsonrpc.Decode(body)
	if !ok || !m.IsResponse() {
		return
	}
	body, _, elsewhere := e.untagAnswer(body, m)
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
