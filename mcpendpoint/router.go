package mcpendpoint

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpendpoint/internal/jsonrpc"
	"github.com/elysia-go/elysia/mcpendpoint/internal/reply"
	"github.com/elysia-go/elysia/mcpendpoint/internal/sessions"
	"github.com/elysia-go/elysia/mcpgateway"
)

// request is one HTTP request of the endpoint as the router read it
// (sessions.Request): a POST's body is read once and decoded once, and
// every handler takes it from here.
type request = sessions.Request

// ServeMCP serves one HTTP request of the endpoint for user, who the
// caller has authenticated: /mcp (Streamable HTTP: POST, the GET stream,
// DELETE; a 2026-07-28 request statelessly, with no session), /sse and
// /message (the legacy SSE transport). A session belongs
// to the user who opened it: another user's request naming it gets 404. A
// DELETE naming no session gets 400 (of 2026-07-28: 405). A body over
// MaxBodyBytes gets 413.
func (e *Endpoint) ServeMCP(w http.ResponseWriter, r *http.Request, user string) {
	q, ok := e.read(w, r, user)
	if !ok {
		return
	}
	switch r.URL.Path {
	case "/mcp":
		if mcp.IsModernProtocol(r.Header.Get(mcpserver.HeaderKeyProtocolVersion)) {
			e.serveModern(w, q)
			return
		}
		e.serveSession(w, q)
	case "/sse":
		e.hub.ServeSSE(w, q.R, user)
	case "/message":
		e.hub.ServeSSEMessage(w, q) // here, or relayed to the replica holding the stream
	default:
		http.NotFound(w, r)
	}
}

// read returns r as a request of user: its context carries the user and
// the endpoint's base URL, and a POST's body is read and decoded. It
// answers a body over MaxBodyBytes (413), or one that could not be read,
// and reports false.
func (e *Endpoint) read(w http.ResponseWriter, r *http.Request, user string) (*request, bool) {
	if r.ContentLength > e.opts.MaxBodyBytes {
		writeRPCError(w, http.StatusRequestEntityTooLarge, mcp.INVALID_REQUEST,
			fmt.Sprintf("request body of %d bytes over the endpoint's limit of %d bytes", r.ContentLength, e.opts.MaxBodyBytes))
		return nil, false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	ctx := withBase(mcpgateway.WithUser(r.Context(), user), scheme+"://"+r.Host)
	q := &request{R: r.WithContext(ctx), User: user, SID: r.Header.Get(mcpserver.HeaderKeySessionID)}
	if r.Method != http.MethodPost || r.Body == nil {
		return q, true
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, e.opts.MaxBodyBytes))
	if err != nil {
		status, text := http.StatusBadRequest, "request body could not be read: "+err.Error()
		var st interface{ HTTPStatus() int }
		if mb := (*http.MaxBytesError)(nil); errors.As(err, &mb) {
			status, text = http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over the endpoint's limit of %d bytes", mb.Limit)
		} else if errors.As(err, &st) {
			status, text = st.HTTPStatus(), err.Error()
		}
		writeRPCError(w, status, mcp.INVALID_REQUEST, text)
		return nil, false
	}
	q.Body = body
	q.Msg, _ = jsonrpc.Decode(body)
	q.R.Body = io.NopCloser(bytes.NewReader(body))
	q.R.ContentLength = int64(len(body))
	return q, true
}

// serveModern serves a 2026-07-28 request on /mcp: no session to share,
// adopt or relay, and any replica answers. What the endpoint answers
// itself is a POST whose Mcp-Method header names its body's method;
// everything else, a mismatch among it, is mcp-go's to answer (it checks
// the headers against the body, and answers GET and DELETE with 405).
func (e *Endpoint) serveModern(w http.ResponseWriter, q *request) {
	if q.Msg != nil && q.Msg.Method != "" && q.Msg.Method == q.R.Header.Get(mcp.HeaderMethod) {
		switch m := q.Msg.Method; {
		case strings.HasPrefix(m, "notifications/") && q.Msg.IsNotification():
			// mcp-go would refuse it with 400 for want of the _meta a
			// request carries, and go-sdk's client then closes its
			// session: it sends notifications/cancelled after it closes a
			// call's stream, which is the cancellation itself.
			w.WriteHeader(http.StatusAccepted)
			return
		case m == "tasks/get" || m == "tasks/update" || m == "tasks/cancel":
			if e.serveTaskMethod(w, q) {
				return
			}
		case m == string(mcp.MethodToolsList):
			if e.serveFastList(w, q) {
				return
			}
		case m == string(mcp.MethodResourcesRead):
			if e.serveUnknownResource(w, q) {
				return
			}
		case m == string(mcp.MethodToolsCall):
			// A task's reply, or an error mcp-go cannot give (tasks.go).
			r := &reply.Reply{}
			w = &reply.Writer{ResponseWriter: w, Reply: r}
			q.R = q.R.WithContext(reply.NewContext(q.R.Context(), r))
		}
	}
	e.http.ServeHTTP(w, q.R)
}

// serveSession serves a request of 2025-11-25 or older on /mcp: of a
// session, shared between the replicas, or one that opens a session.
func (e *Endpoint) serveSession(w http.ResponseWriter, q *request) {
	r, id, user := q.R, q.SID, q.User
	// mcp-go checks a POST's session id (sessionbook.Book) but opens a GET
	// stream on any, where another user would get that session's
	// messages, and answers 500 to a DELETE of an unknown one, or of
	// none.
	if r.Method == http.MethodDelete && id == "" {
		writeRPCError(w, http.StatusBadRequest, mcp.INVALID_REQUEST, "DELETE /mcp needs the Mcp-Session-Id header of the session to end")
		return
	}
	if id != "" && e.opts.Sessions != nil {
		if err := e.hub.ShareSession(r.Context(), id, user); err != nil {
			e.logger.Warn("an MCP session not held here could not be looked up: answered 503", logKeyErr, err)
			sessions.WriteStoreDown(w)
			return
		}
	}
	if (r.Method == http.MethodGet || r.Method == http.MethodDelete) && id != "" && !e.sessions.OwnedBy(id, user) {
		writeRPCError(w, http.StatusNotFound, mcp.INVALID_REQUEST, "unknown MCP session: initialize a new one")
		return
	}
	switch r.Method {
	case http.MethodGet:
		if e.hub.ServeResume(w, q) {
			return
		}
		// A draining replica closes its GET streams, which would hold the
		// HTTP server's Shutdown: the client opens another elsewhere.
		gctx, done, ok := e.drain.Listen(r.Context())
		defer done()
		if !ok {
			sessions.WriteDraining(w, "this replica is shutting down: open the stream again")
			return
		}
		if id != "" {
			defer e.sessions.OpenStream(id)()
			var stop func()
			gctx, stop = e.hub.TrackSession(gctx, id) // the stream ends with the session, here or on another replica
			defer stop()
		}
		q.R = r.WithContext(gctx)
	case http.MethodPost:
		if e.serveFastList(w, q) || e.hub.ServeAnswer(w, q) || e.hub.ServeCallStream(w, q) {
			return
		}
	case http.MethodDelete:
		if e.opts.Sessions != nil && e.sessions.OwnedBy(id, user) && !e.hub.EndEverywhere(r.Context(), w, id, user) {
			return
		}
	}
	e.http.ServeHTTP(e.hub.TagIDs(w), q.R)
	if r.Method == http.MethodDelete && !e.sessions.OwnedBy(id, user) {
		e.hub.CancelSession(id) // the client ended its session: so are its calls
	}
}
