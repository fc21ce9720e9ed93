// Package reply replaces the answer mcp-go writes for a request: the
// result, or a JSON-RPC error mcp-go's handlers cannot give, in the JSON
// body or the one SSE event mcp-go writes it in.
package reply

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/elysia-go/elysia/mcpendpoint/internal/jsonrpc"
	"github.com/elysia-go/elysia/mcpendpoint/internal/sse"
)

type key struct{}

// NewContext returns ctx carrying r, for the handler of the request whose
// answer r replaces.
func NewContext(ctx context.Context, r *Reply) context.Context {
	return context.WithValue(ctx, key{}, r)
}

// FromContext returns the Reply in ctx, or nil.
func FromContext(ctx context.Context) *Reply {
	r, _ := ctx.Value(key{}).(*Reply)
	return r
}

// Reply is what replaces the result mcp-go writes for a request (a
// 2026-07-28 tools/call's task envelope, or an error mcp-go cannot give).
// It is safe for concurrent use; the zero Reply replaces nothing.
type Reply struct {
	mu     sync.Mutex
	result json.RawMessage
	err    json.RawMessage
}

// SetResult makes b the answer's result.
func (r *Reply) SetResult(b []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.result = b
}

// SetError makes the answer a JSON-RPC error; over a JSON body it is sent
// with HTTP 400.
func (r *Reply) SetError(code int, msg string, data any) {
	b, _ := json.Marshal(jsonrpc.ErrorObject{Code: code, Message: msg, Data: data})
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = b
}

// Get returns the result or the error set, if any.
func (r *Reply) Get() (result, rpcErr json.RawMessage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.result, r.err
}

// rewrite returns msg, one JSON-RPC response, with its result or error
// replaced, or nil to leave it.
func (r *Reply) rewrite(msg []byte) []byte {
	result, rpcErr := r.Get()
	if result == nil && rpcErr == nil {
		return nil
	}
	m, ok := jsonrpc.Decode(msg)
	if !ok || !m.IsResponse() {
		return nil
	}
	return m.WithResult(result, rpcErr)
}

// Writer writes mcp-go's answer to a request with its Reply (mcp-go writes
// a JSON body, or an SSE event, in one Write).
type Writer struct {
	http.ResponseWriter
	Reply *Reply
}

// WriteHeader sends code, or 400 for a JSON body whose answer becomes an
// error.
func (w *Writer) WriteHeader(code int) {
	if _, rpcErr := w.Reply.Get(); rpcErr != nil && code == http.StatusOK && w.Header().Get("Content-Type") == "application/json" {
		code = http.StatusBadRequest
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write passes p on with the answer in it rewritten: a JSON body, or an
// SSE event, as mcp-go writes them, in one Write.
func (w *Writer) Write(p []byte) (int, error) {
	if res, rpcErr := w.Reply.Get(); res == nil && rpcErr == nil {
		return w.ResponseWriter.Write(p) // nothing to replace: most calls
	}
	var out []byte
	if ev, _, rest, ok := sse.Next(p); ok && len(rest) == 0 {
		if b := w.Reply.rewrite(ev.Data); b != nil {
			ev.Data = b
			out = sse.Append(nil, ev)
		}
	} else if b := w.Reply.rewrite(p); b != nil {
		out = append(b, '\n')
	}
	if out == nil {
		return w.ResponseWriter.Write(p)
	}
	_, err := w.ResponseWriter.Write(out)
	return len(p), err
}

// Flush flushes the underlying writer.
func (w *Writer) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *Writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }
