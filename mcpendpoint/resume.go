package mcpendpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpendpoint/internal/callstream"
)

// Resumable call streams (SEP-1699, protocol 2025-11-25). A tools/call of
// a 2025-11-25 session whose client accepts an event stream is answered
// on one (internal/callstream): a priming event (an id, a retry interval,
// no data) first, then every message of the call, each with an id, the
// answer last. The call belongs to its stream, not to the connection:
// when the connection drops, or the endpoint closes it after
// Expose.StreamPoll, the call goes on and its messages are kept, and a
// GET with Last-Event-ID set to the last id the client saw takes the
// stream up again where it left off. A call whose stream nobody reads for
// ResumeWait is cancelled upstream, as an abandoned one. The endpoint's
// own progress and log messages go straight onto the stream (notify), so
// none is lost or reordered; what mcp-go writes (the answer, a server's
// question to the client) is read off its response writer
// (callstream.Writer). A stream lives on the replica that runs the call;
// a resume that lands on another is served from there through the Relay
// (resumerelay.go).

// DefaultResumeWait is how long a call whose stream nobody reads is kept
// for the client to resume before it is cancelled. A client resumes
// within the retry interval and its back-off (the TypeScript SDK's is
// about a second), but one that takes a dropped connection for a
// cancellation and sends no notifications/cancelled (mcp-go's HTTP
// client) has its call cancelled only this long after.
const DefaultResumeWait = 10 * time.Second

// streamKey is the context key of a call's stream.
type streamKey struct{}

// streamOf returns the stream of the call in ctx, or nil.
func streamOf(ctx context.Context) *callstream.Stream {
	st, _ := ctx.Value(streamKey{}).(*callstream.Stream)
	return st
}

// serveCallStream answers a tools/call POST on a resumable stream when
// the session negotiated 2025-11-25 and the client accepts event streams,
// and reports whether it did.
func (e *Endpoint) serveCallStream(w http.ResponseWriter, q *request) bool {
	r, sid, user := q.r, q.sid, q.user
	if !q.post(string(mcp.MethodToolsCall)) || !q.msg.IsRequest() || sid == "" || !acceptsEventStream(r) || !e.sessions.Resumable(sid, user) {
		return false
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return false
	}
	if v := r.Header.Get(mcpserver.HeaderKeyProtocolVersion); v != "" && !slices.Contains(protocolVersions, v) {
		return false // mcp-go's 400
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	pending := e.drain.Open() // a shutdown waits for the answer to reach a client
	st := e.streams.Open(sid, user, func() { cancel(); pending.Settle() })
	if st == nil {
		cancel() // past the session's streams: answered as mcp-go does
		pending.Settle()
		return false
	}
	pending.Stream(st.ID())
	inner := r.Clone(context.WithValue(ctx, streamKey{}, st))
	inner.Body = io.NopCloser(bytes.NewReader(q.body))
	cw := callstream.NewWriter(st, q.msg.ID)
	if e.tagsIDs() {
		cw.Rewrite = e.tagRequest
	}
	if !e.streams.Go(func() {
		defer cancel()
		e.http.ServeHTTP(cw, inner)
		cw.Finish()
	}) {
		e.streams.Forget(st) // closing
		return false
	}
	e.streams.ServeNew(r.Context(), &answerWriter{ResponseWriter: w, d: &e.drain, id: st.ID()}, st, e.src.Expose().StreamPoll)
	return true
}

// serveResume answers a GET whose Last-Event-ID names a call stream of
// the session: the messages after that one, then the rest of the call.
// Only the POST's own connection is polled: the GET that resumes it stays
// until the answer, as the conformance suite's client expects. It reports
// whether the request was one; an id of a stream no replica holds gets
// 404.
func (e *Endpoint) serveResume(w http.ResponseWriter, q *request) bool {
	r, sid, user := q.r, q.sid, q.user
	last := r.Header.Get("Last-Event-ID")
	if r.Method != http.MethodGet || sid == "" || last == "" {
		return false
	}
	id, seq, ok := callstream.ParseEventID(last)
	if !ok {
		return false // not one of ours: mcp-go's stream
	}
	st := e.streams.Get(id, sid, user)
	if st == nil {
		if e.drain.Draining() { // the mirror would hold the HTTP server's Shutdown
			writeDraining(w, "this replica is shutting down: resume the stream again")
			return true
		}
		if !e.resumeElsewhere(w, r, id, sid, user, seq) {
			writeRPCError(w, http.StatusNotFound, mcp.INVALID_REQUEST,
				"unknown or expired stream in Last-Event-ID: its call ended, or its replica is gone")
		}
		return true
	}
	e.logResume("MCP call stream resumed", sid, user, seq)
	if err := e.streams.Resume(r.Context(), &answerWriter{ResponseWriter: w, d: &e.drain, id: st.ID()}, st, seq, 0); err != nil {
		e.logger.Warn("MCP call stream resume refused", logKeyUser, user, "session_hash", idHash(sid)[:16], logKeyErr, err)
	}
	return true
}

// logResume logs a resume; the ids are bearers, so the log names the
// session by its hash.
func (e *Endpoint) logResume(msg, sid, user string, seq int) {
	e.logger.Info(msg, logKeyUser, user, "session_hash", idHash(sid)[:16], "after_event", seq)
}

// acceptsEventStream reports whether r's Accept names text/event-stream.
func acceptsEventStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "text/event-stream" {
				return true
			}
		}
	}
	return false
}

// notify sends a notification of the call in ctx to its client: onto the
// call's stream when it has one, else through mcp-go. A gone client
// misses it.
func (e *Endpoint) notify(ctx context.Context, method string, params map[string]any) {
	st := streamOf(ctx)
	if st == nil {
		_ = e.srv.SendNotificationToClient(ctx, method, params) // a gone client misses it
		return
	}
	msg, err := json.Marshal(map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "method": method, "params": params})
	if err == nil {
		st.Add(msg, false)
	}
}

// notifyLog sends a log message of the call in ctx to its client if the
// session's level lets it through (see notify).
func (e *Endpoint) notifyLog(ctx context.Context, n mcp.LoggingMessageNotification) {
	if streamOf(ctx) == nil {
		_ = e.srv.SendLogMessageToClient(ctx, n) // a gone client misses it
		return
	}
	s, ok := mcpserver.ClientSessionFromContext(ctx).(mcpserver.SessionWithLogging)
	if !ok || !n.Params.Level.ShouldSendTo(s.GetLogLevel()) {
		return
	}
	params := map[string]any{"level": n.Params.Level, "data": n.Params.Data}
	if n.Params.Logger != "" {
		params["logger"] = n.Params.Logger
	}
	e.notify(ctx, string(mcp.MethodNotificationMessage), params)
}
