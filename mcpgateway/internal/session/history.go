package session

import (
	"context"
	"encoding/json"
	"fmt"
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

// history keeps a Conn's last requests and notifications. It is safe for
// concurrent use.
type history struct {
	user     string // the Conn's user: "" for a shared Conn
	mask     func(string) string
	requests *ring.Buffer[HistoryEntry]
	notes    *ring.Buffer[HistoryEntry]
}

func newHistory(user string, mask func(string) string) *history {
	return &history{user: user, mask: mask, requests: ring.New[HistoryEntry](HistoryLen), notes: ring.New[HistoryEntry](HistoryLen)}
}

// History returns the last HistoryLen requests the Conn sent or its
// sessions' servers sent it, with their answers, oldest first.
func (c *Conn) History() []HistoryEntry { return c.history.requests.Last(HistoryLen) }

// Notifications returns the last HistoryLen notifications the Conn's
// sessions received, oldest first.
func (c *Conn) Notifications() []HistoryEntry { return c.history.notes.Last(HistoryLen) }

// send sends req with send and keeps it, with its answer and how long it
// took. A nil history (a transport built outside a Conn) keeps nothing.
func (h *history) send(ctx context.Context, req mcptransport.JSONRPCRequest,
	send func(context.Context, mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error)) (*mcptransport.JSONRPCResponse, error) {
	if h == nil {
		return send(ctx, req)
	}
	start := time.Now()
	resp, err := send(ctx, req)
	h.keep(ctx, req, start, resp, err, false)
	return resp, err
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
		h.keep(ctx, req, start, resp, err, true)
		return resp, err
	}
}

// keep adds req, sent at start, and its outcome to the requests.
func (h *history) keep(ctx context.Context, req mcptransport.JSONRPCRequest, start time.Time,
	resp *mcptransport.JSONRPCResponse, err error, fromServer bool) {
	e := HistoryEntry{Time: start, Method: req.Method, ID: fmt.Sprint(req.ID.Value()), FromServer: fromServer, Duration: time.Since(start), User: h.user}
	if ac, _ := ctx.Value(activeCallKey{}).(*activeCall); ac != nil && e.User == "" {
		e.User = ac.user
	}
	e.Bytes, e.Message = h.text(req.Params)
	switch {
	case err != nil:
		e.Error = h.cut(err.Error())
	case resp == nil:
		e.Error = "no answer"
	case resp.Error != nil:
		e.AnswerBytes, e.Answer = h.text(resp.Error)
		e.Error = h.cut(resp.Error.Message)
	default:
		e.AnswerBytes, e.Answer = len(resp.Result), h.cut(string(resp.Result))
	}
	h.requests.Add(e)
}

// notedInHistory keeps n, a notification s received; it belongs to the
// call it came during, as a log message does (logged).
func (c *Conn) notedInHistory(s *Session, n mcp.JSONRPCNotification) {
	h := c.history
	e := HistoryEntry{Time: time.Now(), Method: n.Method, User: h.user}
	if ac := s.callFor(context.Background()); ac != nil && e.User == "" {
		e.User = ac.user
	}
	e.Bytes, e.Message = h.text(n.Params)
	h.notes.Add(e)
}

// text returns v as JSON: its size, and the text masked and cut.
func (h *history) text(v any) (int, string) {
	b, err := json.Marshal(v)
	if err != nil {
		return 0, h.cut(fmt.Sprintf("(not JSON: %v)", err))
	}
	return len(b), h.cut(string(b))
}

// cut masks s, then cuts it to MaxHistoryText. The whole of s is masked
// (masking only its start could leave the start of a secret that
// straddles where it stops); s is at most a message, which
// max_message_size bounds.
func (h *history) cut(s string) string {
	return truncate(h.mask(s), MaxHistoryText)
}
