package session

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
)

// Options tunes a Conn. Unlike the gateway's options, no zero value
// means a default: the gateway passes every field set.
type Options struct {
	// User is the user whose sessions these are: their sign-in, and
	// their log messages; "" for a server's shared sessions.
	User string
	// CloseGrace bounds the close of a session (see Session's close).
	CloseGrace time.Duration
	// CrashLoopDeaths sessions dying within CrashLoopWindow put the
	// server in back-off for CrashBackoff.
	CrashLoopDeaths int
	CrashLoopWindow time.Duration
	CrashBackoff    time.Duration
	// HealthInterval, when positive, is how often a connected server is
	// pinged.
	HealthInterval time.Duration
	// Sampler answers sampling requests; nil refuses them.
	Sampler Sampler
	// Samples counts the server's sampling requests of the last minute,
	// shared by every Conn of the server.
	Samples *SampleWindow
	// Handshake remembers how the server answered server/discover,
	// shared by every Conn of the server; nil gives the Conn its own.
	Handshake *Handshake
	// States, when set, is told every change of the Conn's state.
	States interface {
		ObserveState(server string, state State)
	}
	// Notify, when set, is called on a transport goroutine with every
	// notification a session receives but progress and log messages. It
	// must not block.
	Notify func(s *Session, n mcp.JSONRPCNotification)
	// LookupEnv reads the service's environment for a stdio child.
	LookupEnv func(string) (string, bool)
	// Tokens and Browser are the OAuth token store and the browser of
	// servers that need sign-in (see mcpauth.NewAuthorizer).
	Tokens  mcpauth.TokenStore
	Browser mcpauth.Browser
	// OnProcessStart, when set, is called with the pid of every stdio
	// child started. It must not block.
	OnProcessStart func(pid int)
	// OnSessionUp, when set, is called after every successful connect
	// with the new session, already published (Current returns it unless
	// it died since), and whether it is the Conn's first. OnSessionDown,
	// when set, is called once a published session has died and been
	// retired and closed; the next call, or the hook itself through
	// Session, connects again.
	//
	// Each runs on a goroutine of the Conn, never under its lock and never
	// on a transport's read loop, so it may do I/O and call the Conn; ctx
	// is the Conn's lifetime, which Close cancels before it waits for the
	// hook to return: every wait in a hook must be bounded and end with
	// ctx. The hooks of successive sessions may run concurrently and out
	// of order (a session a call retired may be reported down after its
	// successor is up), and neither runs once Close has begun.
	OnSessionUp   func(ctx context.Context, s *Session, first bool)
	OnSessionDown func(ctx context.Context, s *Session)
}
