package web

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/tools"
)

// querySSE serves POST /query/:user_id/:conversation_id: it runs the query
// and streams its envelopes as Server-Sent Events, one "data:" message per
// envelope, with a ": ping" comment after each idle heartbeat interval.
//
// The status line is sent with the first envelope, so a run refused before
// it starts (a busy conversation, even after the 30 s wait) still gets a
// JSON error with its status code; later failures arrive as an error event.
// Heartbeats start once the stream has. The client going
// away cancels the run.
func (s *Server) querySSE(c *gin.Context) {
	user, conv := c.Param("user_id"), c.Param("conversation_id")
	body, err := readBody(c.Writer, c.Request, s.maxBody)
	if err != nil {
		s.fail(c, err, nil)
		return
	}
	q, err := decodeQueryBody(body)
	if err != nil {
		s.fail(c, err, nil)
		return
	}
	ctx, cancel := context.WithCancel(c.Request.Context())
	defer cancel()
	r := s.startRun(ctx, user, conv, q.QueryID, q.Query)
	w := &sseWriter{w: c.Writer}
	sentError := false
	send := func(env tools.Envelope) bool {
		sentError = sentError || env.Type == tools.EventError
		return w.event(env) == nil
	}
	timer := time.NewTimer(s.heartbeat)
	defer timer.Stop()
	for {
		select {
		case env := <-r.events:
			if !send(env) {
				cancel()
			}
			timer.Reset(s.heartbeat)
		case <-timer.C:
			// No heartbeat before the run's first event: until then the
			// query may still be waiting for its conversation, and a refusal
			// must keep its 409.
			if w.started && w.ping() != nil {
				cancel()
			}
			timer.Reset(s.heartbeat)
		case err := <-r.done:
			for drained := false; !drained; {
				select {
				case env := <-r.events:
					send(env)
				default:
					drained = true
				}
			}
			if err == nil || ctx.Err() != nil {
				if !w.started {
					w.start()
				}
				return
			}
			if !w.started {
				s.fail(c, err, nil)
				return
			}
			if env, ok := s.runErrorEnvelope(ctx, err, user, conv, q.QueryID); ok && !sentError {
				send(env)
			}
			return
		}
	}
}

// sseWriter writes an event stream. It is used by one goroutine.
type sseWriter struct {
	w       gin.ResponseWriter
	started bool
}

// start sends the stream's headers.
func (w *sseWriter) start() {
	w.started = true
	h := w.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx would otherwise hold events back
	w.w.WriteHeader(http.StatusOK)
	w.w.Flush()
}

// event writes one envelope as a "data:" message. An envelope's JSON has
// no raw newlines, so one data line suffices.
func (w *sseWriter) event(env tools.Envelope) error {
	b, err := json.Marshal(env)
	if err != nil {
		return err
	}
	return w.write(append(append([]byte("data: "), b...), '\n', '\n'))
}

// ping writes a heartbeat comment, which EventSource clients ignore.
func (w *sseWriter) ping() error { return w.write([]byte(": ping\n\n")) }

func (w *sseWriter) write(b []byte) error {
	if !w.started {
		w.start()
	}
	if _, err := w.w.Write(b); err != nil {
		return err
	}
	w.w.Flush()
	return nil
}
