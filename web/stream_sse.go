package web

import (
	"context"
	"errors"
	"net/http"
	"os"
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
// Heartbeats start once the stream has. The client going away, or a write
// missing Options.StreamWriteTimeout, cancels the run.
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
	w := newSSEWriter(c.Writer, s.writeTimeout)
	// stop ends the stream after a failed write, as the client going away
	// does. A write that timed out is a client that stopped reading.
	stopped := false
	stop := func(err error) {
		if stopped {
			return
		}
		stopped = true
		if errors.Is(err, os.ErrDeadlineExceeded) {
			s.logWriteTimeout(ctx, "sse", user, conv, q.QueryID)
		}
		cancel()
	}
	sentError := false
	// send writes env and any events already queued behind it (up to
	// maxPendingKept bytes), then flushes once: events the run emits back
	// to back (a result and its tree update) go out in one write, and none
	// waits for a later one.
	send := func(env tools.Envelope) {
		for {
			sentError = sentError || env.Type == tools.EventError
			w.add(env)
			if len(w.pending) >= maxPendingKept {
				break // take no more: this one is full
			}
			var more bool
			select {
			case env, more = <-r.events:
			default:
			}
			if !more {
				break
			}
		}
		if err := w.flush(); err != nil {
			stop(err)
		}
	}
	timer := time.NewTimer(s.heartbeat)
	defer timer.Stop()
	for {
		select {
		case env := <-r.events:
			send(env)
			timer.Reset(s.heartbeat)
		case <-timer.C:
			// No heartbeat before the run's first event: until then the
			// query may still be waiting for its conversation, and a refusal
			// must keep its 409.
			if w.started {
				if err := w.ping(); err != nil {
					stop(err)
				}
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
					_ = w.write(nil) // the stream ends here whether or not its headers get out
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

// sseWriter writes an event stream, each write within a deadline. It is
// used by one goroutine.
type sseWriter struct {
	w gin.ResponseWriter
	// rc sets write deadlines on, and flushes, the connection under w. It
	// controls the writer gin wraps, because gin's Flush drops the error.
	rc      *http.ResponseController
	timeout time.Duration
	started bool
	// err is the first failed write's error: every later write returns it
	// without touching the connection.
	err error
	// pending holds the events added since the last flush; its array is
	// reused from one flush to the next. bad is the error of an event
	// that did not encode: the stream ends after the events before it.
	pending []byte
	bad     error
}

// maxPendingKept bounds the events an sseWriter gathers before it writes
// them (a run that emits without pause must still meet the write
// deadline), and the buffer it keeps between flushes: a rare large result
// should not pin its buffer for the rest of the stream.
const maxPendingKept = 64 << 10

func newSSEWriter(w gin.ResponseWriter, timeout time.Duration) *sseWriter {
	var under http.ResponseWriter = w
	if u, ok := w.(interface{ Unwrap() http.ResponseWriter }); ok {
		under = u.Unwrap()
	}
	return &sseWriter{w: w, rc: http.NewResponseController(under), timeout: timeout}
}

// add appends env to the events to flush, as one "data:" message: an
// envelope's JSON has no raw newlines, so one data line suffices. An
// envelope that does not marshal ends the stream, as a failed write does.
func (w *sseWriter) add(env tools.Envelope) {
	if w.err != nil || w.bad != nil { // the drain after a failure must not marshal every event
		return
	}
	// The payload is NewEnvelope's compact JSON: it is copied in, not
	// compacted again.
	b, err := tools.AppendEnvelope(append(w.pending, "data: "...), env)
	if err != nil {
		w.bad = err
		return
	}
	w.pending = append(b, '\n', '\n')
}

// flush writes the events added since the last flush. After an event
// that did not encode, it writes the ones before it, then fails.
func (w *sseWriter) flush() error {
	if len(w.pending) > 0 && w.err == nil {
		_ = w.write(w.pending) // its error is kept in w.err
		w.pending = w.pending[:0]
		if cap(w.pending) > maxPendingKept {
			w.pending = nil
		}
	}
	if w.err == nil {
		w.err = w.bad
	}
	return w.err
}

// ping writes a heartbeat comment, which EventSource clients ignore.
func (w *sseWriter) ping() error { return w.write([]byte(": ping\n\n")) }

// write sends b, preceded by the stream's headers if they have not gone
// yet, and flushes, all within the write timeout. A nil b sends only the
// headers.
func (w *sseWriter) write(b []byte) error {
	if w.err != nil {
		return w.err
	}
	w.err = w.setDeadline(time.Now().Add(w.timeout))
	if w.err == nil {
		w.err = w.send(b)
	}
	// The deadline must not outlive the write: the stream may idle until
	// its next event, and a kept-alive connection serves later requests.
	if err := w.setDeadline(time.Time{}); w.err == nil {
		w.err = err
	}
	return w.err
}

func (w *sseWriter) send(b []byte) error {
	if !w.started {
		w.started = true
		h := w.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no") // nginx would otherwise hold events back
		w.w.WriteHeader(http.StatusOK)
		w.w.WriteHeaderNow()
	}
	if len(b) > 0 {
		if _, err := w.w.Write(b); err != nil {
			return err
		}
	}
	return w.rc.Flush()
}

// setDeadline sets the connection's write deadline. A writer that has none
// (httptest.ResponseRecorder) writes without one.
func (w *sseWriter) setDeadline(t time.Time) error {
	if err := w.rc.SetWriteDeadline(t); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}
