// Package sse writes Server-Sent Events for web's streams (the query
// streams, the event streams, a streamed execute): each write and its
// flush within a deadline, so that a client that stops reading ends its
// stream instead of holding it, and events emitted back to back go out in
// one write. It is internal to web and its sub-packages.
package sse

import (
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/tools"
)

// Writer writes an event stream, each write within a deadline. It is
// used by one goroutine.
type Writer struct {
	w gin.ResponseWriter
	// rc sets write deadlines on, and flushes, the connection under w. It
	// controls the writer gin wraps, because gin's Flush drops the error.
	rc      *http.ResponseController
	timeout time.Duration
	// started says the stream's headers have gone: from then on, a
	// failure can only be told as an event.
	started bool
	// err is the first failed write's error: every later write returns it
	// without touching the connection.
	err error
	// pending holds the events added since the last flush, in buf, a
	// buffer taken from pendingBuffers by the first Add after a flush and
	// given back by the flush: streams share a few buffers instead of
	// each growing its own. bad is the error of an event that did not
	// encode: the stream ends after the events before it.
	pending []byte
	buf     *[]byte
	bad     error
}

// pendingBuffers are the Writers' buffers of events between flushes.
var pendingBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// MaxPendingKept bounds the events a Writer gathers before it writes
// them (a run that emits without pause must still meet the write
// deadline), and the buffer it keeps between flushes: a rare large result
// should not pin its buffer for the rest of the stream.
const MaxPendingKept = 64 << 10

// NewWriter returns a Writer of an event stream on w, each write (and its
// flush) bounded by timeout. Nothing is written before the first write.
func NewWriter(w gin.ResponseWriter, timeout time.Duration) *Writer {
	var under http.ResponseWriter = w
	if u, ok := w.(interface{ Unwrap() http.ResponseWriter }); ok {
		under = u.Unwrap()
	}
	return &Writer{w: w, rc: http.NewResponseController(under), timeout: timeout}
}

// Add appends env to the events to flush, as one "data:" message: an
// envelope's JSON has no raw newlines, so one data line suffices. An
// envelope that does not marshal ends the stream, as a failed write does.
func (w *Writer) Add(env tools.Envelope) {
	if w.err != nil || w.bad != nil { // the drain after a failure must not marshal every event
		return
	}
	if w.buf == nil {
		w.buf = pendingBuffers.Get().(*[]byte)
		w.pending = (*w.buf)[:0]
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

// Flush writes the events added since the last flush. After an event
// that did not encode, it writes the ones before it, then fails.
func (w *Writer) Flush() error {
	if len(w.pending) > 0 && w.err == nil {
		_ = w.Write(w.pending) // its error is kept in w.err; the bytes are written (or dropped) when it returns
	}
	if w.buf != nil {
		if cap(w.pending) <= MaxPendingKept {
			*w.buf = w.pending[:0]
			pendingBuffers.Put(w.buf)
		}
		w.pending, w.buf = nil, nil
	}
	if w.err == nil {
		w.err = w.bad
	}
	return w.err
}

// Ping writes a heartbeat comment, which EventSource clients ignore.
func (w *Writer) Ping() error { return w.Write([]byte(": ping\n\n")) }

// Write sends b, preceded by the stream's headers if they have not gone
// yet, and flushes, all within the write timeout. A nil b sends only the
// headers.
func (w *Writer) Write(b []byte) error {
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

func (w *Writer) send(b []byte) error {
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
func (w *Writer) setDeadline(t time.Time) error {
	if err := w.rc.SetWriteDeadline(t); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// Started reports whether the stream's headers have gone (with its first
// write): until then a failure can still be answered with a status.
func (w *Writer) Started() bool { return w.started }

// Pending is how many bytes of events were added since the last Flush.
func (w *Writer) Pending() int { return len(w.pending) }
