package stream

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/web/internal/sse"
)

// querySSE serves POST /query/:user_id/:conversation_id: it runs the query
// and streams its envelopes as Server-Sent Events, one "data:" message per
// envelope, with a ": ping" comment after each idle heartbeat interval.
//
// The status line is sent with the first envelope, so a run refused before
// it starts (a busy conversation, even after the 30 s wait) still gets a
// JSON error with its status code; later failures arrive as an error event.
// Heartbeats start once the stream has. The client going away, or a write
// missing web.Options.StreamWriteTimeout, cancels the run.
func (s *Streams) querySSE(c *gin.Context) {
	user, conv := c.Param("user_id"), c.Param("conversation_id")
	body, err := s.k.ReadBody(c)
	if err != nil {
		s.k.Fail(c, err, nil)
		return
	}
	q, err := s.decodeQueryBody(body)
	if err != nil {
		s.k.Fail(c, err, nil)
		return
	}
	ctx, cancel := context.WithCancel(c.Request.Context())
	defer cancel()
	r := s.startRun(ctx, user, conv, q.QueryID, q.Query)
	w := sse.NewWriter(c.Writer, s.writeTimeout)
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
			w.Add(env)
			if w.Pending() >= sse.MaxPendingKept {
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
		if err := w.Flush(); err != nil {
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
			if w.Started() {
				if err := w.Ping(); err != nil {
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
				if !w.Started() {
					_ = w.Write(nil) // the stream ends here whether or not its headers get out
				}
				return
			}
			if !w.Started() {
				s.k.Fail(c, err, nil)
				return
			}
			if env, ok := s.runErrorEnvelope(ctx, err, user, conv, q.QueryID); ok && !sentError {
				send(env)
			}
			return
		}
	}
}
