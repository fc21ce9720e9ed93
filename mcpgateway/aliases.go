package mcpgateway

import (
	"context"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
)

// The names below are the session package's (mcpgateway/internal/session,
// the connection owner), given here to the gateway's callers: what a
// server's state is, what it logged, and how a server's sampling requests
// and log messages reach the service and the users' own clients.

// State is where a gateway stands, as /api/servers shows it.
type State = session.State

// Gateway states.
const (
	StateIdle        = session.StateIdle        // no session; the next call connects
	StateConnecting  = session.StateConnecting  // a connect attempt is running
	StateConnected   = session.StateConnected   // a session is up
	StateDegraded    = session.StateDegraded    // a session is up but recent calls failed
	StateFailed      = session.StateFailed      // unresolved config, a failed connect until the next attempt, back-off
	StateDisabled    = session.StateDisabled    // "enabled": false in mcp.json
	StateNeedsSignIn = session.StateNeedsSignIn // the asking user must sign in (OAuth)
)

// LogConnectFailed is the message of the warning a failed connect logs,
// with its error: a one-shot command that reports that error itself may
// leave the warning out.
const LogConnectFailed = session.LogConnectFailed

// LogEntry is one notifications/message a server sent, masked and cut.
type LogEntry = session.LogEntry

// ServerError is an error of one MCP server: its message names the server
// and the operation, with the server's secrets masked.
type ServerError = session.ServerError

// ErrUnavailable is matched (with errors.Is) by errors saying a server
// cannot be used right now: disabled, unresolved config, or in back-off
// after a crash loop.
var ErrUnavailable = session.ErrUnavailable

// Sampler writes a message with the service's model for a server's
// sampling/createMessage (see session.Sampler).
type Sampler = session.Sampler

// SampleRequest is a server's sampling request, text only; SampleResult
// the model's reply.
type (
	SampleRequest = session.SampleRequest
	SampleResult  = session.SampleResult
)

// ClientSampler and ClientLogger are optional interfaces of a call's
// tools.Emitter: the aggregate MCP endpoint's, which passes a server's
// sampling requests and log messages on to its own client.
type (
	ClientSampler = session.ClientSampler
	ClientLogger  = session.ClientLogger
)

// ServerLogPayload is the payload of an EventServerLog event.
type ServerLogPayload = session.ServerLogPayload

// EventServerLog is the event a ClientLogger's stream gets for a server's
// log message during a call.
const EventServerLog = session.EventServerLog

// Caps on what a server sends during one call.
const (
	// MaxElicitationsPerCall is how many questions one call's server may
	// put to the user.
	MaxElicitationsPerCall = session.MaxElicitationsPerCall
	// ProgressInterval is the least time between two progress events of
	// one call on the user's stream.
	ProgressInterval = session.ProgressInterval
)

// ElicitationCompleter is an optional interface of a call's tools.Emitter
// (or of the caller named with WithElicitationCompleter): it is told when a
// server's url-mode question completes (see session.ElicitationCompleter).
type ElicitationCompleter = session.ElicitationCompleter

// WithElicitationCompleter marks the tool calls made with ctx as made for
// ec: the MCP client of the aggregate endpoint's ask tool, whose calls the
// decision tree makes.
func WithElicitationCompleter(ctx context.Context, ec ElicitationCompleter) context.Context {
	return session.WithElicitationCompleter(ctx, ec)
}

// RootsLister is implemented by the Emitter of a call whose MCP client may
// give a server its roots (see session.RootsLister).
type RootsLister = session.RootsLister

// InputKeyFrom returns the key a 2026-07-28 server named the question
// asked with ctx by, and how many questions its round has ("" and 0
// otherwise): an Asker, ClientSampler or RootsLister that passes the
// question on as input_required may ask it under that key.
func InputKeyFrom(ctx context.Context) (key string, roundSize int) { return session.InputKeyFrom(ctx) }

// CapabilityNoter is implemented by the Emitter of a call made for an MCP
// client that hears of a server's request the client could not answer
// for want of a capability (see session.CapabilityNoter).
type CapabilityNoter = session.CapabilityNoter

// WithCallerSampling marks the tool calls made with ctx as made for an MCP
// client that answers sampling requests itself (cs), or, with cs nil, for
// one that declared no sampling (see session.WithCallerSampling).
func WithCallerSampling(ctx context.Context, cs ClientSampler) context.Context {
	return session.WithCallerSampling(ctx, cs)
}

// ProgressPacer is implemented by the Emitter of a call that takes the
// server's progress at another pace than ProgressInterval (see
// session.ProgressPacer): the aggregate MCP endpoint's.
type ProgressPacer = session.ProgressPacer
