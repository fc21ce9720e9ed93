package session

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway/internal/ring"
)

// HistoryEntry is one message of a server's history, what the panel's
// History pane shows: a request the gateway sent and the answer it got, a
// request the server sent (sampling, elicitation, roots) and the answer
// the gateway gave, or a notification the server sent. Its texts are
// masked, then cut.
type HistoryEntry struct {
	// Time is when the request was sent, or the notification received.
	Time   time.Time `json:"time"`
	Method string    `json:"method"`
	// ID is a request's JSON-RPC id; "" for a notification.
	ID string `json:"id,omitempty"`
	// FromServer marks a request the server sent; Duration is then how
	// long the gateway (and the user it asked) took to answer.
	FromServer bool `json:"from_server,omitempty"`
	// Duration is how long the answer took; zero for a notification.
	Duration time.Duration `json:"duration"`
	// Bytes is the size of the message's params as JSON; Message is
	// that JSON, masked and cut to MaxHistoryText.
	Bytes   int    `json:"bytes"`
	Message string `json:"message"`
	// AnswerBytes is the size of a request's result (or JSON-RPC error)
	// as JSON; Answer is that JSON, masked and cut. Both are zero when
	// no answer came: Error then says why.
	AnswerBytes int    `json:"answer_bytes,omitempty"`
	Answer      string `json:"answer,omitempty"`
	// Error is why the request failed: the server's JSON-RPC error
	// message, or what kept an answer from coming. "" when it succeeded.
	Error string `json:"error,omitempty"`
	// User is whom the message belongs to: the user of the session it
	// went on (a session per user), or of the call it was part of on a
	// shared session; "" when nobody's (a listing, a ping, the
	// handshake) or, for a request of the server's, when no call could
	// be told.
	User string `json:"user,omitempty"`
	// Copy is the copy of the server (1 is the server's own keys) the
	// message went on, for a server with copies; the gateway sets it.
	Copy int `json:"copy,omitempty"`
}

const (
	// HistoryLen is how many requests, and how many notifications, a
	// Conn keeps: with their texts cut to MaxHistoryText, a Conn's
	// history holds at most about 3 * HistoryLen * MaxHistoryText bytes.
	HistoryLen = 50
	// MaxHistoryText bounds one kept text (a message or an answer).
	MaxHistoryText = 4 << 10
)

// maxRawKept bounds a text kept as it came, to be masked and cut when the
// history is read. A longer one is masked whole and cut when it is kept,
// as masking only the start of a text could leave the start of a secret
// that straddles where it stops; it is cut to MaxHistoryText anyway.
const maxRawKept = MaxHistoryText

// history keeps a Conn's last requests and notifications. It is safe for
// concurrent use.
//
// Most messages are kept as they came (a copy of at most maxRawKept bytes
// each), and masked and formatted only when the history is read, which is
// rare: every call of every server goes through here, and masking and
// formatting each message cost more than the rest of keeping it.
type history struct {
	user     string // the Conn's user: "" for a shared Conn
	mask     func(string) string
	requests *ring.Buffer[kept]
	notes    *ring.Buffer[kept]
}

// kept is one entry as history keeps it: e with its texts, and ID, still
// to be filled from the fields below.
type kept struct {
	e  HistoryEntry
	id mcp.RequestId // a request's; formatted into e.ID when read
	// message, answer and error are e's Message, Answer and Error, each
	// either ready (masked and cut) or raw.
	message, answer, error keptText
}

// keptText is a text kept raw (unmasked, at most maxRawKept bytes) or
// ready to show.
type keptText struct {
	raw   []byte
	ready string
}

// keepText keeps b, a copy of it when it is short enough to mask later.
func (h *history) keepText(b []byte) keptText {
	if len(b) <= maxRawKept {
		return keptText{raw: bytes.Clone(b)}
	}
	return keptText{ready: h.cut(string(b))}
}

// keepOwned is keepText for b that nobody else writes to: kept as it is.
// marshalValue's output is such a b for the params of requests (mcp-go's
// types, maps): json.Marshal and their MarshalJSON return new slices.
func (h *history) keepOwned(b []byte) keptText {
	if len(b) <= maxRawKept {
		return keptText{raw: b}
	}
	return keptText{ready: h.cut(string(b))}
}

// keepString is keepText for a string.
func (h *history) keepString(s string) keptText {
	if len(s) <= maxRawKept {
		return keptText{raw: []byte(s)}
	}
	return keptText{ready: h.cut(s)}
}

// show returns t masked and cut.
func (h *history) show(t keptText) string {
	if t.raw == nil {
		return t.ready
	}
	return h.cut(string(t.raw))
}

// entry is k as the history shows it: masked, cut, its id written.
func (h *history) entry(k kept) HistoryEntry {
	e := k.e
	if !k.id.IsNil() {
		e.ID = h.mask(fmt.Sprint(k.id.Value())) // a server's own, on its requests
	}
	e.Message, e.Answer, e.Error = h.show(k.message), h.show(k.answer), h.show(k.error)
	return e
}

// last returns the newest HistoryLen entries of r, oldest first, masked.
func (h *history) last(r *ring.Buffer[kept]) []HistoryEntry {
	all := r.Last(HistoryLen)
	out := make([]HistoryEntry, len(all))
	for i, k := range all {
		out[i] = h.entry(k)
	}
	return out
}

func newHistory(user string, mask func(string) string) *history {
	return &history{user: user, mask: mask, requests: ring.New[kept](HistoryLen), notes: ring.New[kept](HistoryLen)}
}

// History returns the last HistoryLen requests the Conn sent or its
// sessions' servers sent it, with their answers, oldest first.
func (c *Conn) History() []HistoryEntry { return c.history.last(c.history.requests) }

// Notifications returns the last HistoryLen notifications the Conn's
// sessions received, oldest first.
func (c *Conn) Notifications() []HistoryEntry { return c.history.last(c.history.notes) }

// send sends req with send and keeps it, with its answer and how long it
// took, and notes the round of an input_required answer for the call's
// handlers (inputkeys.go). A nil history (a transport built outside a
// Conn) keeps nothing.
func (h *history) send(ctx context.Context, req mcptransport.JSONRPCRequest,
	send func(context.Context, mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error)) (*mcptransport.JSONRPCResponse, error) {
	start := time.Now()
	var sent []byte
	if h != nil {
		sent, req.Params = marshalParams(req.Params)
	}
	resp, err := send(ctx, req)
	if resp != nil {
		noteInputRound(ctx, resp.Result)
	}
	if h != nil {
		h.keep(ctx, req, sent, start, resp, err, false)
	}
	return resp, err
}

// marshalParams returns params as JSON, and what the transport is to send
// in their place: the same JSON, so that the history keeps what was sent
// without marshalling the params a second time. Params that are nil, or do
// not marshal, go as they are (sent is then nil): nil params are left out of
// the request, not sent as null.
func marshalParams(params any) (sent []byte, wire any) {
	if params == nil || isNilPointer(params) {
		return nil, params
	}
	if raw, ok := params.(json.RawMessage); ok {
		return bytes.Clone(raw), params // the caller's: kept as a copy
	}
	b, err := marshalValue(params)
	if err != nil {
		return nil, params
	}
	return b, json.RawMessage(b)
}

// serve returns next, the handler of the requests the server sends on s,
// keeping each request with the answer next gave and how long it took. A
// request belongs to the call it came during, as a question does
// (callFor).
func (h *history) serve(s *Session, next mcptransport.RequestHandler) mcptransport.RequestHandler {
	if h == nil || next == nil {
		return next
	}
	return func(ctx context.Context, req mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
		start := time.Now()
		resp, err := next(ctx, req)
		if ac := s.callFor(ctx); ac != nil {
			ctx = withCall(ctx, ac)
		}
		h.keep(ctx, req, nil, start, resp, err, true)
		return resp, err
	}
}

// keep adds req, sent at start, and its outcome to the requests; sent is
// its params as JSON when the caller has them (nil: they are marshalled).
func (h *history) keep(ctx context.Context, req mcptransport.JSONRPCRequest, sent []byte, start time.Time,
	resp *mcptransport.JSONRPCResponse, err error, fromServer bool) {
	k := kept{e: HistoryEntry{Time: start, Method: req.Method, FromServer: fromServer, Duration: time.Since(start), User: h.user}, id: req.ID}
	if ac, _ := ctx.Value(activeCallKey{}).(*activeCall); ac != nil && k.e.User == "" {
		k.e.User = ac.user
	}
	if sent != nil {
		k.e.Bytes, k.message = len(sent), h.keepOwned(sent)
	} else {
		k.e.Bytes, k.message = h.text(req.Params)
	}
	switch {
	case err != nil:
		k.error = h.keepString(err.Error())
	case resp == nil:
		k.error = keptText{ready: "no answer"}
	case resp.Error != nil:
		k.e.AnswerBytes, k.answer = h.text(resp.Error)
		k.error = h.keepString(resp.Error.Message)
	default:
		k.e.AnswerBytes, k.answer = len(resp.Result), h.keepText(resp.Result)
	}
	h.requests.Add(k)
}

// notedInHistory keeps n, a notification s received; it belongs to the
// call it came during, as a log message does (logged).
func (c *Conn) notedInHistory(s *Session, n mcp.JSONRPCNotification) {
	h := c.history
	k := kept{e: HistoryEntry{Time: time.Now(), Method: n.Method, User: h.user}}
	if ac := s.callFor(context.Background()); ac != nil && k.e.User == "" {
		k.e.User = ac.user
	}
	k.e.Bytes, k.message = h.text(n.Params)
	h.notes.Add(k)
}

// text returns v as JSON: its size, and the text kept.
func (h *history) text(v any) (int, keptText) {
	b, err := marshalValue(v)
	if err != nil {
		return 0, keptText{ready: h.cut(fmt.Sprintf("(not JSON: %v)", err))}
	}
	return len(b), h.keepText(b)
}

// marshalValue is json.Marshal of v, writing a tools/call's params itself
// (callParams) and asking any other value that marshals itself directly
// (mcp-go's params, which json.Marshal compacts): json.Marshal would scan
// its output again.
func marshalValue(v any) ([]byte, error) {
	if p, ok := v.(mcp.CallToolParams); ok {
		if raw, ok := callParams(p); ok {
			return raw, nil
		}
	}
	if m, ok := v.(json.Marshaler); ok && v != nil && !isNilPointer(v) {
		return m.MarshalJSON()
	}
	return json.Marshal(v)
}

// isNilPointer reports whether v is a nil pointer, which json.Marshal
// writes as null without calling its MarshalJSON.
func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// cut masks s, then cuts it to MaxHistoryText. The whole of s is masked
// (masking only its start could leave the start of a secret that
// straddles where it stops); s is at most a message, which
// max_message_size bounds.
func (h *history) cut(s string) string {
	return truncate(h.mask(s), MaxHistoryText)
}
