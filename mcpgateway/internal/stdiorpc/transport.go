// Package stdiorpc is the gateway's JSON-RPC transport over a stdio
// server's pipes: one message per line each way, requests matched to
// their responses by id, the server's notifications and requests handed to
// handlers. It is mcp-go's transport.BidirectionalInterface, so mcp-go's
// Client runs over it as over mcp-go's own Stdio, whose behaviour it keeps
// (what it takes and skips, its errors, its order of delivery); it differs
// in its cost and its bounds:
//
//   - a line is read once: its envelope is found in one pass over it
//     (classify), and a response's result is kept as sent (mcp-go
//     decodes every line twice, and a response's result twice more);
//   - a request is written without encoding its params again when they
//     are JSON already;
//   - the server's requests being served at once are capped
//     (MaxServerRequests); mcp-go starts a goroutine for each, however
//     many.
//
// The transport neither starts nor ends the process: the caller gives it
// the pipes and closes them (Close closes the write end only). The length
// of a line is the reader's to bound (a line is read whole).
package stdiorpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/tools"
)

// MaxServerRequests is how many of the server's requests (sampling,
// elicitation, roots) are served at once by default; one more is answered
// with an error at once.
const MaxServerRequests = 16

// Options configure a Transport.
type Options struct {
	// Logger gets the transport's failures; nil is slog.Default().
	Logger *slog.Logger
	// Line, when set, sees each line the server sends (without its line
	// end) before the message is delivered; it must not keep the slice.
	Line func([]byte)
	// MaxServerRequests overrides MaxServerRequests when positive.
	MaxServerRequests int
}

// Transport is a JSON-RPC connection over a server's stdout (read) and
// stdin (written).
type Transport struct {
	in     *bufio.Reader
	out    io.WriteCloser
	logger *slog.Logger
	line   func([]byte)

	outMu sync.Mutex // a line is written whole

	mu      sync.Mutex
	pending map[string]chan *mcptransport.JSONRPCResponse // by the request id's String

	handlersMu sync.RWMutex
	onNote     func(mcp.JSONRPCNotification)
	onRequest  mcptransport.RequestHandler

	serving chan struct{} // a token per server request being served

	started   atomic.Bool
	ctx       context.Context //nolint:containedctx // the lifetime Start gives: the server's requests are served under it
	done      chan struct{}   // closed when the read loop ends or Close runs
	doneOnce  sync.Once
	closeOnce sync.Once

	long []byte // a line longer than the reader's buffer, put together
}

// New returns a transport reading the server's messages from r and
// writing to w.
func New(r io.Reader, w io.WriteCloser, opts Options) *Transport {
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	n := opts.MaxServerRequests
	if n <= 0 {
		n = MaxServerRequests
	}
	return &Transport{
		in:      bufio.NewReaderSize(r, 16<<10),
		out:     w,
		logger:  logger,
		line:    opts.Line,
		pending: make(map[string]chan *mcptransport.JSONRPCResponse),
		serving: make(chan struct{}, n),
		ctx:     context.Background(),
		done:    make(chan struct{}),
	}
}

// Start starts reading the server's messages; the server's requests are
// served under ctx. Starting again does nothing.
func (t *Transport) Start(ctx context.Context) error {
	if !t.started.CompareAndSwap(false, true) {
		return nil
	}
	t.ctx = ctx
	go t.read()
	return nil
}

// Close ends the transport: requests waiting for an answer fail with
// transport.ErrTransportClosed, and the server's stdin is closed (it
// reads EOF). The read end is the caller's to close.
func (t *Transport) Close() error {
	t.closeDone()
	var err error
	t.closeOnce.Do(func() {
		if cerr := t.out.Close(); cerr != nil {
			err = fmt.Errorf("failed to close stdin: %w", cerr)
		}
	})
	return err
}

func (t *Transport) closeDone() { t.doneOnce.Do(func() { close(t.done) }) }

// GetSessionId returns "": stdio has no session id.
func (t *Transport) GetSessionId() string { return "" }

// SetNotificationHandler sets what gets the server's notifications, one at
// a time, in the order sent.
func (t *Transport) SetNotificationHandler(handler func(mcp.JSONRPCNotification)) {
	t.handlersMu.Lock()
	t.onNote = handler
	t.handlersMu.Unlock()
}

// SetRequestHandler sets what serves the server's requests, each on a
// goroutine of its own, at most MaxServerRequests at once.
func (t *Transport) SetRequestHandler(handler mcptransport.RequestHandler) {
	t.handlersMu.Lock()
	t.onRequest = handler
	t.handlersMu.Unlock()
}

// replies are the channels a request's response is delivered on; a
// channel is used again only once its one response has been received.
var replies = sync.Pool{New: func() any { return make(chan *mcptransport.JSONRPCResponse, 1) }}

// SendRequest writes req and waits for its response, ctx or the end of
// the transport. The write itself is not bounded by ctx: a server that
// stops reading holds it until the pipe is closed.
func (t *Transport) SendRequest(ctx context.Context, req mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
	select {
	case <-t.done:
		return nil, mcptransport.ErrTransportClosed
	default:
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	buf := getBuf()
	defer putBuf(buf)
	line, err := appendRequest((*buf)[:0], req)
	*buf = line
	if err != nil {
		return nil, fmt.Errorf("failed to marshal request: %w", err)
	}
	key := req.ID.String()
	ch := replies.Get().(chan *mcptransport.JSONRPCResponse)
	t.mu.Lock()
	t.pending[key] = ch
	t.mu.Unlock()
	if err := t.write(line); err != nil {
		if t.forget(key, ch) {
			replies.Put(ch)
		}
		return nil, fmt.Errorf("failed to write request: %w", err)
	}
	select {
	case resp := <-ch:
		replies.Put(ch)
		return resp, nil
	case <-ctx.Done():
		if t.forget(key, ch) {
			replies.Put(ch)
		}
		return nil, ctx.Err()
	case <-t.done:
		// A response read just before the end still counts.
		select {
		case resp := <-ch:
			replies.Put(ch)
			return resp, nil
		default:
		}
		t.forget(key, ch)
		return nil, mcptransport.ErrTransportClosed
	}
}

// forget drops the wait of the request key with channel ch, reporting
// whether it was still waiting (no response will be delivered on ch). A
// wait under the same key that is not ch's (a later request reusing the
// id) is left alone, and ch is then not to be reused.
func (t *Transport) forget(key string, ch chan *mcptransport.JSONRPCResponse) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if cur, ok := t.pending[key]; ok && cur == ch {
		delete(t.pending, key)
		return true
	}
	return false
}

// SendNotification writes a notification.
func (t *Transport) SendNotification(ctx context.Context, note mcp.JSONRPCNotification) error {
	select {
	case <-t.done:
		return mcptransport.ErrTransportClosed
	default:
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := json.Marshal(note)
	if err != nil {
		return fmt.Errorf("failed to marshal notification: %w", err)
	}
	if err := t.write(append(b, '\n')); err != nil {
		return fmt.Errorf("failed to write notification: %w", err)
	}
	return nil
}

func (t *Transport) write(line []byte) error {
	t.outMu.Lock()
	defer t.outMu.Unlock()
	_, err := t.out.Write(line)
	return err
}

// read delivers the server's messages until its stdout ends, fails or the
// transport is closed.
func (t *Transport) read() {
	defer t.closeDone()
	for {
		select {
		case <-t.done:
			return
		default:
		}
		line, err := t.readLine()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) && !errors.Is(err, fs.ErrClosed) && !errors.Is(err, io.ErrClosedPipe) {
				t.logger.Error("reading the server's output failed", "err", err)
			}
			return
		}
		line = trimLineEnd(line)
		if t.line != nil {
			t.line(line)
		}
		t.deliver(line)
		if cap(t.long) > longLineKeep {
			t.long = nil // a big message is not held for the next
		}
	}
}

// longLineKeep is the most a put-together line keeps of its buffer for the
// next one.
const longLineKeep = 256 << 10

// readLine returns the next line, its newline included, valid until the
// next call. A last line without a newline is an error, as the end is.
func (t *Transport) readLine() ([]byte, error) {
	line, err := t.in.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return line, err
	}
	t.long = append(t.long[:0], line...)
	for err == bufio.ErrBufferFull {
		line, err = t.in.ReadSlice('\n')
		t.long = append(t.long, line...)
	}
	return t.long, err
}

// trimLineEnd drops the line's trailing CRs and LFs.
func trimLineEnd(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// deliver hands one line to whoever waits for it; a line that is no
// message, or answers no request waiting, is dropped.
func (t *Transport) deliver(line []byte) {
	m := decode(line)
	switch m.kind {
	case kindNotification:
		t.handlersMu.RLock()
		if t.onNote != nil {
			t.onNote(m.note)
		}
		t.handlersMu.RUnlock()
	case kindRequest:
		t.serve(m.req)
	case kindResponse:
		t.respond(m)
	}
}

// message is a line decoded as far as its delivery needs.
type message struct {
	kind kind
	note mcp.JSONRPCNotification     // kindNotification
	req  mcptransport.JSONRPCRequest // kindRequest
	env  envelope                    // kindResponse
	errd *mcp.JSONRPCErrorDetails    // kindResponse: its error, if any
}

// decode reads a line as mcp-go's stdio transport does: a notification or
// a request is decoded whole (they are few), a response's envelope only.
func decode(line []byte) message {
	env, k := classify(line)
	m := message{kind: k, env: env}
	switch k {
	case kindNotification:
		if json.Unmarshal(line, &m.note) != nil {
			m.kind = kindDrop
		}
		return m
	case kindRequest:
		if json.Unmarshal(line, &m.req) == nil {
			return m
		}
		m.kind = kindResponse // as mcp-go: what is not a request may yet be a response
	case kindDrop:
		return m
	}
	switch {
	case env.errTwice:
		var resp mcptransport.JSONRPCResponse
		if json.Unmarshal(line, &resp) != nil {
			m.kind = kindDrop
		}
		m.errd = resp.Error
	case env.errv != nil:
		m.errd = new(mcp.JSONRPCErrorDetails)
		if json.Unmarshal(env.errv, m.errd) != nil {
			m.kind = kindDrop
		}
	}
	return m
}

// respond delivers a response to the request it answers.
func (t *Transport) respond(m message) {
	var kb [64]byte
	key := responseKey(kb[:0], m.env.id)
	t.mu.Lock()
	ch, ok := t.pending[string(key)]
	if ok {
		delete(t.pending, string(key))
	}
	t.mu.Unlock()
	if !ok {
		return
	}
	resp := &mcptransport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, Error: m.errd}
	if m.env.id != nil {
		resp.ID = requestID(m.env.id)
	}
	if m.env.result != nil {
		resp.Result = append(json.RawMessage(nil), m.env.result...)
	}
	ch <- resp // buffered, and only this send is made on it
}

// serve answers a request of the server, on a goroutine of its own.
func (t *Transport) serve(req mcptransport.JSONRPCRequest) {
	t.handlersMu.RLock()
	handler := t.onRequest
	t.handlersMu.RUnlock()
	if handler == nil {
		t.answer(*mcptransport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND, "No request handler configured", nil))
		return
	}
	select {
	case t.serving <- struct{}{}:
	default:
		t.answer(*mcptransport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR,
			"too many requests from the server are being served at once (at most "+strconv.Itoa(cap(t.serving))+")", nil))
		return
	}
	// The goroutine ends when the handler does: handlers are bounded by
	// ctx (the session's), which ends before the session is gone.
	ctx := t.ctx
	go func() {
		defer func() { <-t.serving }()
		if err := ctx.Err(); err != nil {
			t.answer(*mcptransport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR, err.Error(), nil))
			return
		}
		resp, err := handler(ctx, req)
		switch {
		case err != nil:
			t.answer(*mcptransport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR, err.Error(), nil))
		case resp != nil:
			t.answer(*resp)
		}
	}()
}

// answer writes a response to a request of the server. An answer that
// meets the stdin the transport's owner closed (a server asking just as
// its session ends) is expected, so it is logged at debug level.
func (t *Transport) answer(resp mcptransport.JSONRPCResponse) {
	b, err := json.Marshal(resp)
	if err != nil {
		t.logger.Error("encoding an answer to the server failed", "err", err)
		return
	}
	if err := t.write(append(b, '\n')); err != nil {
		level := slog.LevelError
		if errors.Is(err, os.ErrClosed) {
			level = slog.LevelDebug
		}
		t.logger.Log(t.ctx, level, "writing an answer to the server failed", "err", err)
	}
}

// appendRequest appends req to b as one line of JSON, as json.Marshal
// writes it (fields in order, HTML escaped), except that params already
// JSON on one line are passed as they are.
func appendRequest(b []byte, req mcptransport.JSONRPCRequest) ([]byte, error) {
	b = append(b, `{"jsonrpc":`...)
	b = tools.AppendJSONString(b, req.JSONRPC, true)
	b = append(b, `,"id":`...)
	switch id := req.ID.Value().(type) {
	case string:
		b = tools.AppendJSONString(b, id, true)
	case int64:
		b = strconv.AppendInt(b, id, 10)
	default:
		raw, err := json.Marshal(req.ID)
		if err != nil {
			return b, err
		}
		b = append(b, raw...)
	}
	b = append(b, `,"method":`...)
	b = tools.AppendJSONString(b, req.Method, true)
	if req.Params != nil {
		b = append(b, `,"params":`...)
		var err error
		if b, err = appendParams(b, req.Params); err != nil {
			return b, err
		}
	}
	return append(b, "}\n"...), nil
}

// appendParams appends params as JSON on one line.
func appendParams(b []byte, params any) ([]byte, error) {
	raw, ok := params.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(params); err != nil {
			return b, err
		}
		return append(b, raw...), nil
	}
	if raw == nil {
		return append(b, "null"...), nil
	}
	if !json.Valid(raw) {
		return b, errors.New("params are not valid JSON")
	}
	if bytes.IndexByte(raw, '\n') < 0 {
		return append(b, raw...), nil
	}
	out := bytes.NewBuffer(b)
	if err := json.Compact(out, raw); err != nil {
		return b, err
	}
	return out.Bytes(), nil
}

// lines are the buffers requests are written from.
var lines = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledLine is the largest buffer put back in lines.
const maxPooledLine = 64 << 10

func getBuf() *[]byte { return lines.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) <= maxPooledLine {
		lines.Put(b)
	}
}
