package session

import "errors"

// ErrClosed is returned by a Gateway's methods after Close, and by calls that
// were in flight when Close ran.
var ErrClosed = errors.New("gateway closed")

// ErrSamplingRefused is matched (with errors.Is) by the error a server gets
// for a sampling request of a server with "sampling" set that the gateway
// refuses: no tools/call of a user in flight, over a cap
// (sampling_per_call, sampling_per_minute, sampling_max_input), or, with
// "ask", no interactive user to approve it or no answer within
// elicitation_timeout.
var ErrSamplingRefused = errors.New("sampling refused")

// ErrUnavailable is matched (with errors.Is) by errors saying a server cannot
// be used right now: disabled, unresolved config, or in back-off after a
// crash loop.
var ErrUnavailable = errors.New("server unavailable")

// ErrMessageTooLarge is matched (with errors.Is) by the error of a stdio
// server that sent a message (a line of JSON-RPC) over its
// max_message_size: the session is closed, and the next call starts a new
// process.
var ErrMessageTooLarge = errors.New("message over max_message_size")

// ErrSamplingOff is matched by the error a server gets when it asks for
// sampling without "sampling" set in mcp.json.
var ErrSamplingOff = errors.New(`sampling is not enabled for this server (set "sampling": "ask" or "auto" in mcp.json)`)

// ErrCallerCannotSample is the error a server gets when it asks for
// sampling during the call of an MCP client that did not declare sampling,
// and the server's "sampling" is off: nobody can answer it. The aggregate
// endpoint tells a 2026-07-28 client its capability is missing (-32021).
var ErrCallerCannotSample = errors.New(`sampling: the MCP client that made the call did not declare the sampling capability, and this server's "sampling" is off in mcp.json`)

// ErrSamplingDeclined is the error a server gets when the user of the call
// ("sampling": "ask") denies its sampling request or the model's reply.
var ErrSamplingDeclined = errors.New("sampling: the user declined the request")

// ServerError is an error of one MCP server: its message names the server and
// the operation ("server \"todo\": connect: ..."), with the server's secrets
// masked. It unwraps to the underlying error, so errors.Is still matches
// ErrClosed, ErrUnavailable or context errors.
type ServerError struct {
	// Server is the server's name in mcp.json.
	Server string
	// Op is what failed: "connect", "list", "call create_todo", ...
	Op string
	// Err is the underlying error.
	Err error
	msg string // the masked message Error returns
}

func (e *ServerError) Error() string { return e.msg }

// Unwrap returns the underlying error.
func (e *ServerError) Unwrap() error { return e.Err }
