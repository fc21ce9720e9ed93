package sessions

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpendpoint/internal/callstream"
	"github.com/elysia-go/elysia/mcpendpoint/internal/drain"
	"github.com/elysia-go/elysia/mcpendpoint/internal/jsonrpc"
	"github.com/elysia-go/elysia/mcpendpoint/internal/sse"
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
// own progress and log messages go straight onto the stream (Notify), so
// none is lost or reordered; what mcp-go writes (the answer, a server's
// question to the client) is read off its response writer
// (callstream.Writer). A stream lives on the replica that runs the call;
// a resume that lands on another is served from there through the Relay
// (resumerelay.go).

// streamKey is the context key of a call's stream.
type streamKey struct{}

// streamOf returns the stream of the call in ctx, or nil.
func streamOf(ctx context.Context) *callstream.Stream {
	st, _ := ctx.Value(streamKey{}).(*callstream.Stream)
	return st
}

// ServeCallStream answers a tools/call POST on a resumable stream when
// the session negotiated 2025-11-25 and the client accepts event streams,
// and reports whether it did.
func (h *Hub) ServeCallStream(w http.ResponseWriter, q *Request) bool {
	r, sid, user := q.R, q.SID, q.User
	if !q.Post(string(mcp.MethodToolsCall)) || !q.Msg.IsRequest() || sid == "" || !acceptsEventStream(r) || !h.Book.Resumable(sid, user) {
		return false
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return false
	}
	if v := r.Header.Get(mcpserver.HeaderKeyProtocolVersion); v != "" && !slices.Contains(Versions, v) {
		return false // mcp-go's 400
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	pending := h.Drain.Open() // a shutdown waits for the answer to reach a client
	st := h.streams.Open(sid, user, func() { cancel(); pending.Settle() })
	if st == nil {
		cancel() // past the session's streams: answered as mcp-go does
		pending.Settle()
		return false
	}
	pending.Stream(st.ID())
	inner := r.Clone(context.WithValue(ctx, streamKey{}, st))
	inner.Body = io.NopCloser(bytes.NewReader(q.Body))
	cw := callstream.NewWriter(st, q.Msg.ID)
	if h.tagsIDs() {
		cw.Rewrite = h.tagRequest
	}
	if !h.streams.Go(func() {
		defer cancel()
		h.http.ServeHTTP(cw, inner)
		cw.Finish()
	}) {
		h.streams.Forget(st) // closing
		return false
	}
	h.streams.ServeNew(r.Context(), &answerWriter{ResponseWriter: w, d: h.Drain, id: st.ID()}, st, h.StreamPoll())
	return true
}

// ServeResume answers a GET whose Last-Event-ID names a call stream of
// the session: the messages after that one, then the rest of the call.
// Only the POST's own connection is polled: the GET that resumes it stays
// until the answer, as the conformance suite's client expects. It reports
// whether the request was one; an id of a stream no replica holds gets
// 404.
func (h *Hub) ServeResume(w http.ResponseWriter, q *Request) bool {
	r, sid, user := q.R, q.SID, q.User
	last := r.Header.Get("Last-Event-ID")
	if r.Method != http.MethodGet || sid == "" || last == "" {
		return false
	}
	id, seq, ok := callstream.ParseEventID(last)
	if !ok {
		return false // not one of ours: mcp-go's stream
	}
	st := h.streams.Get(id, sid, user)
	if st == nil {
		if h.Drain.Draining() { // the mirror would hold the HTTP server's Shutdown
			WriteDraining(w, "this replica is shutting down: resume the stream again")
			return true
		}
		if !h.resumeElsewhere(w, r, id, sid, user, seq) {
			jsonrpc.WriteError(w, http.StatusNotFound, mcp.INVALID_REQUEST,
				"unknown or expired stream in Last-Event-ID: its call ended, or its replica is gone")
		}
		return true
	}
	h.logResume("MCP call stream resumed", sid, user, seq)
	if err := h.streams.Resume(r.Context(), &answerWriter{ResponseWriter: w, d: h.Drain, id: st.ID()}, st, seq, 0); err != nil {
		h.Logger.Warn("MCP call stream resume refused", logKeyUser, user, "session_hash", idHash(sid)[:16], logKeyErr, err)
	}
	return true
}

// logResume logs a resume; the ids are bearers, so the log names the
// session by its hash.
func (h *Hub) logResume(msg, sid, user string, seq int) {
	h.Logger.Info(msg, logKeyUser, user, "session_hash", idHash(sid)[:16], "after_event", seq)
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

// Notify sends a notification of the call in ctx to its client: onto the
// call's stream when it has one, else through mcp-go. A gone client
// misses it.
func (h *Hub) Notify(ctx context.Context, method string, params map[string]any) {
	st := streamOf(ctx)
	if st == nil {
		_ = h.srv.SendNotificationToClient(ctx, method, params) // a gone client misses it
		return
	}
	msg, err := json.Marshal(map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "method": method, "params": params})
	if err == nil {
		st.Add(msg, false)
	}
}

// NotifyLog sends a log message of the call in ctx to its client if the
// session's level lets it through (see Notify).
func (h *Hub) NotifyLog(ctx context.Context, n mcp.LoggingMessageNotification) {
	if streamOf(ctx) == nil {
		_ = h.srv.SendLogMessageToClient(ctx, n) // a gone client misses it
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
	h.Notify(ctx, string(mcp.MethodNotificationMessage), params)
}

// answerWriter is the http.ResponseWriter of a call stream's reader here:
// once a write that carries the call's answer succeeded, the answer is
// handed over (drain.State.Answered).
type answerWriter struct {
	http.ResponseWriter
	d  *drain.State
	id string
}

func (w *answerWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	if err == nil && framesResponse(b) {
		w.d.Answered(w.id)
	}
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *answerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// framesResponse reports whether b, SSE events as a call stream writes
// them, carries a JSON-RPC response: the only one a call's stream carries
// is its answer.
func framesResponse(b []byte) bool {
	if !bytes.Contains(b, []byte(`"result"`)) && !bytes.Contains(b, []byte(`"error"`)) {
		return false // the cheap test: progress and log messages
	}
	for {
		ev, _, rest, ok := sse.Next(b)
		if !ok {
			return false
		}
		b = rest
		if jsonrpc.IsResponse(ev.Data) {
			return true
		}
	}
}
