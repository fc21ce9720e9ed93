package session

import (
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
}
