package web

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/web/internal/sse"
)

// InteractiveServers is an optional capability of a Servers: Execute with a
// user who watches the call. POST /api/servers/:name/execute uses it for a
// client that asks for an event stream (Accept: text/event-stream).
type InteractiveServers interface {
	// ExecuteWith is Servers.Execute with emit receiving what the server
	// says during the call: progress as status events, warnings, and
	// questions through emit's tools.Asker. Cancelling ctx cancels the
	// call on the server.
	ExecuteWith(ctx context.Context, name, tool string, inputs map[string]any, emit tools.Emitter) (ExecuteResult, error)
}

// executeBuffer is how many events a panel run may emit ahead of a slow
// client; emit then waits (progress and questions are few).
const executeBuffer = 64

// wantsEventStream reports whether the request's Accept asks for an event
// stream.
func wantsEventStream(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// executeDone is the outcome of an ExecuteWith call.
type executeDone struct {
	res ExecuteResult
	err error
}

// executeSSE serves POST /api/servers/:name/execute for a client that asks
// for text/event-stream: the call runs with an interactive user, the key's
// (the server panel). Its events (progress as status, the server's
// questions as elicitation events answered through POST /elicitations/:id,
// warnings) are streamed as they come, then the outcome: a result event
// whose payload is the JSON answer's body ({"error": "", "result"}), or an
// error event {"text", "status"}; then completed.
//
// As for a query, the status line goes with the first event: a call that
// ends before it emits anything (invalid inputs, an unknown tool, a server
// that cannot be reached) gets the JSON answer with its status code, the
// same as without the Accept header. The client going away, or a write
// missing the write timeout, cancels the call: the gateway sends the server
// notifications/cancelled.
func (s *Server) executeSSE(c *gin.Context, srv InteractiveServers, body executeBody) {
	ctx, cancel := context.WithCancel(c.Request.Context())
	defer cancel()
	user := Principal(ctx)
	callID := tools.NewID()
	events := make(chan tools.Envelope, executeBuffer)
	emit := func(ev tools.Event) {
		env, err := tools.NewEnvelope(ev, user, "", callID)
		if err != nil {
			s.logger.WarnContext(ctx, "dropping an event whose payload does not marshal", slog.String(logKeyType, string(ev.Type)), slog.Any(logKeyErr, err))
			return
		}
		select {
		case events <- env:
		case <-ctx.Done():
		}
	}
	done := make(chan executeDone, 1)
	name := c.Param("name")
	go func() {
		res, err := srv.ExecuteWith(ctx, name, body.ToolName, body.ToolInputs, s.deps.Trees.Interactive(user, emit))
		done <- executeDone{res, err}
	}()
	w := sse.NewWriter(c.Writer, s.writeTimeout)
	send := func(env tools.Envelope) {
		w.Add(env)
		if err := w.Flush(); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				s.logger.WarnContext(ctx, "stream write timed out: client stopped reading; ending the stream",
					slog.String(logKeyStream, "execute"), slog.String(logKeyUserID, user), slog.String(logKeyQueryID, callID),
					slog.Duration(logKeyTimeout, s.writeTimeout))
			}
			cancel()
		}
	}
	timer := time.NewTimer(s.heartbeat)
	defer timer.Stop()
	for {
		select {
		case env := <-events:
			send(env)
			timer.Reset(s.heartbeat)
		case <-timer.C:
			if w.Started() {
				if err := w.Ping(); err != nil {
					cancel()
				}
			}
			timer.Reset(s.heartbeat)
		case d := <-done:
			for drained := false; !drained; {
				select {
				case env := <-events:
					send(env)
				default:
					drained = true
				}
			}
			if ctx.Err() != nil {
				return // the client went away: no one reads the outcome
			}
			if !w.Started() {
				if d.err != nil {
					s.failServer(c, d.err, object{kv("result", nil)})
					return
				}
				writeJSON(c, http.StatusOK, ok(kv("result", d.res)))
				return
			}
			send(s.executeOutcome(ctx, d, user, callID))
			if env, err := tools.NewEnvelope(tools.Event{Type: tools.EventCompleted, Payload: map[string]any{}}, user, "", callID); err == nil {
				send(env)
			}
			return
		}
	}
}

// executeOutcome is the event that ends a streamed call: its result, or
// its error with the status code and text the JSON answer would have had.
func (s *Server) executeOutcome(ctx context.Context, d executeDone, user, callID string) tools.Envelope {
	if d.err == nil {
		env, err := tools.NewEnvelope(tools.Event{Type: tools.EventResult, Payload: map[string]any{"error": "", "result": d.res}}, user, "", callID)
		if err == nil {
			return env
		}
		d.err = err
	}
	status := serverStatus(d.err)
	msg := publicMessage(ctx, status, d.err)
	if status >= 500 {
		msg = d.err.Error() // Servers promises it names the server and holds no secret
		var ra retryAter
		if errors.As(d.err, &ra) {
			if at := ra.RetryAt(); !at.IsZero() {
				secs := max(int64(math.Ceil(time.Until(at).Seconds())), 1)
				msg += "; retry after " + at.UTC().Format(time.RFC3339) + " (in " + strconv.FormatInt(secs, 10) + " s)"
			}
		}
		msg += " (request id " + RequestID(ctx) + ")"
		s.logger.ErrorContext(ctx, "request failed", slog.Int(logKeyStatus, status), slog.String(logKeyRoute, "/api/servers/:name/execute"), slog.Any(logKeyErr, d.err))
	}
	env, _ := tools.NewEnvelope(tools.Event{Type: tools.EventError, Payload: map[string]any{"text": msg, "status": status}},
		user, "", callID) // a map of a string and an int always marshals
	return env
}
