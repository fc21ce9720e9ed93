package mcpgateway

import (
	"log/slog"
	"os"
	"time"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
)

// Options tunes a [Gateway]. A nil *Options means the defaults; New copies
// the struct, so changing it afterwards has no effect. Every zero value means
// the documented default, so tests set only what they shorten.
type Options struct {
	// Logger receives the gateway's lifecycle logs, scoped with
	// "server"=<server name>. Nil means a discard logger.
	Logger *slog.Logger

	// OutputCap bounds, in bytes, the text an execute gives the model
	// (Result.LLMText) and the content kept in Result.Objects and
	// CallResult.Content. Zero means 64 KiB.
	OutputCap int

	// CloseGrace bounds how long closing a stdio server waits: stdin is
	// closed first, the process group gets SIGTERM after half the grace and
	// SIGKILL after the whole grace. Zero means 2 s.
	CloseGrace time.Duration

	// CrashLoopDeaths sessions dying within CrashLoopWindow put the server in
	// back-off (state failed) for CrashBackoff; a single death is replaced at
	// once on the next call. Zeros mean 3 deaths, 30 s and 30 s.
	CrashLoopDeaths int
	CrashLoopWindow time.Duration
	CrashBackoff    time.Duration

	// CircuitFailures consecutive transport failures or timeouts of execute
	// (not isError results, schema failures or unknown tools) open the
	// server's circuit for CircuitOpenFor: executes then fail at once, and
	// after it one trial call is let through. Zeros mean 5 and 30 s. The
	// circuit and the back-off read one clock, time.Now (gobreaker's has no
	// other); tests fake it with testing/synctest.
	CircuitFailures int
	CircuitOpenFor  time.Duration

	// CopyProbe is how long after a copy of a server with copies went
	// down it is first checked again (a ping on the shared session);
	// each failed check, and each flap, doubles the wait up to
	// CircuitOpenFor. Zero means 1 s.
	CopyProbe time.Duration

	// HealthInterval, when positive, makes the gateway ping a connected
	// server that often (each ping bounded by connect_timeout); a failed
	// ping ends the session, so the next call reconnects. Zero means no
	// pings.
	HealthInterval time.Duration

	// Sampler, when set, answers sampling/createMessage for servers with
	// "sampling" set ("ask": once the call's user approves). Nil means such requests are refused saying no
	// model is configured.
	Sampler session.Sampler

	// Observer, when set, is told the outcome of every execute and every
	// change of the circuit (see Observer) and, when it also implements
	// StateObserver, every change of the connection's state. Nil means none.
	Observer Observer

	// LookupEnv reads the service's environment for the allow-list a stdio
	// child inherits (see ChildEnv). Nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)

	// Tokens keeps the OAuth tokens of servers that need sign-in, per
	// (server, user). Nil means a MemoryTokenStore of the gateway's own:
	// tokens then last as long as the gateway.
	Tokens mcpauth.TokenStore
	// Pending keeps the web sign-ins started and not finished (see
	// StartSignIn). Nil means a MemoryPendingSignIns of the gateway's own:
	// the callback must then reach the process that started the sign-in.
	Pending mcpauth.PendingSignIns

	// UserSecrets gives the users' own secrets that mcp.json takes as
	// ${user:NAME} (in headers, and in env of stdio servers). Nil means no
	// user has any: a call to such a server fails with an error naming
	// what to set (matching mcpauth.ErrSignInRequired).
	UserSecrets UserSecrets

	// Browser, when set, lets a call sign its user in by itself when the
	// server asks for it (the CLI with ELYSIA_OAUTH_BROWSER=fetch). Nil
	// means such a call fails with ErrSignInRequired, and the user signs
	// in through SignIn or StartSignIn.
	Browser mcpauth.Browser

	// UserIdle closes a user's session of a per-user server after that
	// long without a call; zero means 15 minutes. MaxUsers caps the
	// per-user sessions of one server: past it the least recently used
	// idle one is closed, never one with a call in flight; zero means 100.
	// When all MaxUsers are busy a new user's call waits up to UserWait
	// for one to go idle, then fails saying too many users; zero means 10 s.
	UserIdle time.Duration
	MaxUsers int
	UserWait time.Duration

	// Pins, when set, keeps the servers' pinned tool definitions: each
	// listing is held against them (see PinStore, "pin" in mcp.json). Nil
	// means no pinning.
	Pins PinStore

	// OnProcessStart, when set, is called with the pid of every stdio child
	// the gateway starts, after it started. It must not block. Tests use it
	// to count spawns.
	OnProcessStart func(pid int)
}

const (
	defaultOutputCap       = 64 << 10
	defaultCloseGrace      = 2 * time.Second
	defaultCrashLoopDeaths = 3
	defaultCrashLoopWindow = 30 * time.Second
	defaultCrashBackoff    = 30 * time.Second
	defaultCircuitFailures = 5
	defaultCircuitOpenFor  = 30 * time.Second
	defaultCopyProbe       = time.Second
	defaultUserIdle        = 15 * time.Minute
	defaultMaxUsers        = 100
	defaultUserWait        = 10 * time.Second
)

// withDefaults returns a copy of o (nil allowed) with every zero field set.
func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.OutputCap <= 0 {
		c.OutputCap = defaultOutputCap
	}
	if c.CloseGrace <= 0 {
		c.CloseGrace = defaultCloseGrace
	}
	if c.CrashLoopDeaths <= 0 {
		c.CrashLoopDeaths = defaultCrashLoopDeaths
	}
	if c.CrashLoopWindow <= 0 {
		c.CrashLoopWindow = defaultCrashLoopWindow
	}
	if c.CrashBackoff <= 0 {
		c.CrashBackoff = defaultCrashBackoff
	}
	if c.CircuitFailures <= 0 {
		c.CircuitFailures = defaultCircuitFailures
	}
	if c.CircuitOpenFor <= 0 {
		c.CircuitOpenFor = defaultCircuitOpenFor
	}
	if c.CopyProbe <= 0 {
		c.CopyProbe = defaultCopyProbe
	}
	if c.Tokens == nil {
		c.Tokens = &mcpauth.MemoryTokenStore{}
	}
	if c.Pending == nil {
		c.Pending = &mcpauth.MemoryPendingSignIns{}
	}
	if c.UserIdle <= 0 {
		c.UserIdle = defaultUserIdle
	}
	if c.MaxUsers <= 0 {
		c.MaxUsers = defaultMaxUsers
	}
	if c.UserWait <= 0 {
		c.UserWait = defaultUserWait
	}
	if c.LookupEnv == nil {
		c.LookupEnv = os.LookupEnv
	}
	return c
}
