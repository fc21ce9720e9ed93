package web

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// ServerHistory is the optional part of Servers behind the panel's History
// pane: a window into the wire to one server. web checks for it with a
// type assertion; without it GET /api/servers/:name/history answers 501.
// Errors follow the rules of Servers.
type ServerHistory interface {
	// History returns what the key of ctx (Principal) may see of the
	// server's last requests, answers, notifications and stderr: an admin
	// key (and every request without keys) all of it, a user's key the
	// shared sessions' traffic that is nobody's or theirs and their own
	// sessions'. Every text is masked.
	History(ctx context.Context, name string) (History, error)
}

// History is the body of GET /api/servers/:name/history.
type History struct {
	// Requests are the gateway's last requests to the server with their
	// answers, oldest first; Notifications the server's last
	// notifications. Nil is sent as [].
	Requests      []HistoryEntry `json:"requests"`
	Notifications []HistoryEntry `json:"notifications"`
	// Stderr is the last lines of each of the server's stdio processes
	// running now.
	Stderr []StderrTail `json:"stderr"`
}

// HistoryEntry is one request and its answer (the gateway's, or the
// server's when FromServer), or one notification.
type HistoryEntry struct {
	// Time is when the request was sent or the notification came.
	Time   time.Time `json:"time"`
	Method string    `json:"method"`
	// ID is a request's JSON-RPC id; "" for a notification.
	ID string `json:"id,omitempty"`
	// FromServer marks a request the server sent (sampling, elicitation,
	// roots), answered by the service.
	FromServer bool `json:"from_server,omitempty"`
	// DurationMS is how long the answer took, in milliseconds.
	DurationMS float64 `json:"duration_ms"`
	// Bytes is the size of the message's params as JSON; Message is that
	// JSON, masked and cut (4 KiB).
	Bytes   int    `json:"bytes"`
	Message string `json:"message"`
	// AnswerBytes and Answer are the same of the answer's result or
	// JSON-RPC error; Error says why a request failed.
	AnswerBytes int    `json:"answer_bytes"`
	Answer      string `json:"answer"`
	Error       string `json:"error,omitempty"`
	// User is whose session or call it was; "" when nobody's.
	User string `json:"user,omitempty"`
	// Copy is the copy of a server with copies it went on (1, 2, ...).
	Copy int `json:"copy,omitempty"`
}

// StderrTail is the last lines one stdio process wrote to stderr.
type StderrTail struct {
	User  string   `json:"user,omitempty"`
	Copy  int      `json:"copy,omitempty"`
	Lines []string `json:"lines"`
}

// serverHistory serves GET /api/servers/:name/history.
func (s *Server) serverHistory(c *gin.Context) {
	h, has := s.deps.Servers.(ServerHistory)
	if !has {
		s.fail(c, &requestError{http.StatusNotImplemented, "this service does not keep a history of what it sends MCP servers"}, object{kv("history", nil)})
		return
	}
	v, err := h.History(c.Request.Context(), c.Param("name"))
	if err != nil {
		s.failServer(c, err, object{kv("history", nil)})
		return
	}
	if v.Requests == nil {
		v.Requests = []HistoryEntry{}
	}
	if v.Notifications == nil {
		v.Notifications = []HistoryEntry{}
	}
	if v.Stderr == nil {
		v.Stderr = []StderrTail{}
	}
	writeJSON(c, http.StatusOK, ok(kv("history", v)))
}
