package session

import (
	"context"
	"errors"
	"net"
	"syscall"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
)

// Auth returns the OAuth state of the Conn's user; nil for servers that
// need no sign-in.
func (c *Conn) Auth() *mcpauth.Authorizer { return c.auth }

// Lifetime returns the Conn's own ctx: it ends when Close starts.
func (c *Conn) Lifetime() context.Context { return c.lifetime }

// Logs returns the server's last LogLines log messages, oldest first.
func (c *Conn) Logs() []LogEntry { return c.logs.Last(LogLines) }

// SetDialer replaces how the Conn dials a session; tests set it, before
// the first call, to dial in-process servers (see DialTransport).
func (c *Conn) SetDialer(dial func(hsCtx context.Context) (*Session, error)) { c.dialer = dial }

// Client returns the session's initialized MCP client, for the requests a
// caller sends itself (resources, prompts, completions).
func (s *Session) Client() *mcpclient.Client { return s.client }

// Offers says which of tools, resources and prompts the server offers.
func (s *Session) Offers() []string { return s.offers }

// Remask returns a copy of e with its message masked again by mask.
func (e *ServerError) Remask(mask func(string) string) *ServerError {
	masked := *e
	masked.msg = mask(e.msg)
	return &masked
}

// DialTransport starts a session over t, a transport the caller built
// (tests use in-process ones), as the real dialers do: registered with the
// Conn, started on its lifetime as a remote one is, and initialized within
// hsCtx. It is meant for a dialer given to SetDialer. There is no
// server/discover probe: the handshake is initialize, at the server's
// protocol_version or 2025-11-25.
func (c *Conn) DialTransport(hsCtx context.Context, name string, t mcptransport.Interface) (*Session, error) {
	s := newSession(name)
	if err := c.adopt(s); err != nil {
		return nil, err
	}
	version := c.cfg.ProtocolVersion
	if version == "" {
		version = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	}
	return c.startRemote(hsCtx, s, mcpclient.NewClient(t, c.clientOptions(s, version)...))
}

// Done is closed once the session has been closed, its process and
// goroutines ended.
func (s *Session) Done() <-chan struct{} { return s.closed }

// Stderr returns the last lines the session's stdio child wrote to
// stderr, masked; nil for other transports.
func (s *Session) Stderr() []string {
	if s.proc == nil {
		return nil
	}
	return s.proc.ring.Last()
}

// Reported returns the progress the call of user in flight on s last
// reported, 0 when none is in flight.
func (s *Session) Reported(user string) float64 {
	s.callsMu.Lock()
	defer s.callsMu.Unlock()
	for _, ac := range s.calls {
		if ac.user == user {
			ac.mu.Lock()
			defer ac.mu.Unlock()
			return ac.progress
		}
	}
	return 0
}

// Ping checks that the server answers, bounded by ctx: on the live
// session, connecting when there is none. An error answer proves the
// server is there and counts as an answer; a session found dead is
// retired, so the next call connects again.
func (c *Conn) Ping(ctx context.Context) error {
	s, err := c.Session(ctx)
	if err != nil {
		return err
	}
	err = c.ping(ctx, s)
	if err == nil || IsServerAnswer(err) {
		return nil
	}
	if ctx.Err() == nil {
		s.MarkDead(err)
		c.Retire(s)
	}
	return c.CallErr(ctx, "ping", err)
}

// NotSent reports whether err proves that a request never reached the
// server: no connection could be made (refused, unreachable, a name that
// does not resolve), the HTTP session was unknown, or writing to the
// child's stdin failed.
func NotSent(err error) bool {
	if sentNothing(err) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) {
		return true
	}
	if _, ok := errors.AsType[*net.DNSError](err); ok {
		return true
	}
	op, ok := errors.AsType[*net.OpError](err)
	return ok && op.Op == "dial"
}
