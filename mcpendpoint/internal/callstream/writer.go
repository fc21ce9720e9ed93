package callstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/elysia-go/elysia/mcpendpoint/internal/jsonrpc"
	"github.com/elysia-go/elysia/mcpendpoint/internal/sse"
)

// maxErrorText bounds the text of an HTTP error that a stream relays.
const maxErrorText = 512

// Writer is the http.ResponseWriter a server library answers a streamed
// call on: what it writes, one JSON body or SSE events, becomes the
// stream's messages. Call Finish once the library has answered.
type Writer struct {
	// Rewrite, when set, rewrites each message but the answer before it
	// goes onto the stream.
	Rewrite func(msg []byte) []byte

	st   *Stream
	id   json.RawMessage // the call's JSON-RPC id
	h    http.Header
	code int
	sse  bool
	buf  []byte // an SSE event not yet complete, or the JSON body
}

// NewWriter returns the Writer of st's call, whose JSON-RPC id is id.
func NewWriter(st *Stream, id json.RawMessage) *Writer {
	return &Writer{st: st, id: id, h: http.Header{}}
}

// Header is the answer's header.
func (c *Writer) Header() http.Header { return c.h }

// WriteHeader records the answer's status and kind.
func (c *Writer) WriteHeader(code int) {
	if c.code != 0 {
		return
	}
	c.code = code
	mt, _, _ := mime.ParseMediaType(c.h.Get("Content-Type"))
	c.sse = code == http.StatusOK && mt == "text/event-stream"
}

// Write takes part of the answer.
func (c *Writer) Write(b []byte) (int, error) {
	c.WriteHeader(http.StatusOK)
	c.buf = append(c.buf, b...)
	if c.sse {
		c.events()
	}
	return len(b), nil
}

// Flush does nothing: being a Flusher tells the library it may stream
// notifications and questions.
func (c *Writer) Flush() {}

// events moves each complete SSE event in buf onto the stream.
func (c *Writer) events() {
	for {
		ev, _, rest, ok := sse.Next(c.buf)
		if !ok {
			return
		}
		c.buf = rest
		switch msg := ev.Data; {
		case len(msg) == 0:
		case jsonrpc.IsResponse(msg):
			c.st.Add(msg, true)
		case c.Rewrite != nil:
			c.st.Add(c.Rewrite(msg), false)
		default:
			c.st.Add(msg, false)
		}
	}
}

// Finish ends the stream once the library has answered: a JSON answer is
// the answer, and an HTTP error, or no answer at all, becomes a JSON-RPC
// error of the call.
func (c *Writer) Finish() {
	if c.code == http.StatusOK && !c.sse && json.Valid(c.buf) {
		c.st.Add(bytes.Clone(c.buf), true)
		return
	}
	text := "the call ended without an answer"
	if !c.sse {
		body := strings.TrimSpace(string(c.buf[:min(len(c.buf), maxErrorText)]))
		if body == "" {
			body = http.StatusText(c.code)
		}
		text = fmt.Sprintf("HTTP %d: %s", c.code, body)
	}
	c.st.Add(ErrorAnswer(c.id, text), true) // dropped when the library streamed the answer
}
