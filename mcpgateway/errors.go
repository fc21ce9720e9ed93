package mcpgateway

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/tools"
)

// errDraining is matched (with errors.Is) by the error of a call made while
// the gateway drains before being replaced or removed (see Gateway.Drain).
// It also matches session.ErrClosed: to the caller the gateway is going away.
var errDraining error = drainingError{}

type drainingError struct{}

func (drainingError) Error() string { return "server is being replaced or removed" }

// Is reports whether target is session.ErrClosed.
func (drainingError) Is(target error) bool { return target == session.ErrClosed }

// errTooManyUsers is matched (with errors.Is) by the error of a call of a
// new user to a per-user server whose MaxUsers sessions were all busy with
// calls for UserWait: no session is closed under a call, and the call may
// be tried again shortly.
var errTooManyUsers = errors.New("too many users")

// ErrBadCursor is matched (with errors.Is) by the error of a ListQuery whose
// Cursor no page gave.
var ErrBadCursor = errors.New("invalid cursor")

// ErrCircuitOpen is matched (with errors.Is) by the error of an execute
// refused because the server's circuit is open, or half-open with its one
// trial call still running. Such errors also match ErrUnavailable.
var ErrCircuitOpen = errors.New("circuit open")

// ErrNoSecret is returned by a UserSecrets' Secret when the user has not
// set a secret of that name.
var ErrNoSecret = errors.New("no secret set")

// errSecretRequired is matched (errors.Is) by the error of a call to a
// server whose configuration takes a secret of the asking user's own
// (${user:NAME}) that the user has not set. The error is a
// *secretRequiredError; it also matches mcpauth.ErrSignInRequired, since, like a
// missing sign-in, the user must act before the server can serve them and
// nothing is wrong with the server.
var errSecretRequired = errors.New("user secret required")

// unknownToolError reports an execute of a tool the server does not have (or
// that allow/deny filters out). It matches tools.ErrUnknownTool.
type unknownToolError struct {
	Server string
	Tool   string
	// Available lists the tools that can be called, in the server's order.
	Available []string
	// Closest is the available name nearest to Tool (edit distance); "" when
	// none is close.
	Closest string
}

func (e *unknownToolError) Error() string {
	msg := fmt.Sprintf("server %q has no tool %q", e.Server, e.Tool)
	if e.Closest != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", e.Closest)
	}
	return msg + "; available: " + strings.Join(e.Available, ", ")
}

// Is reports whether target is tools.ErrUnknownTool.
func (e *unknownToolError) Is(target error) bool { return target == tools.ErrUnknownTool }

// serverErr wraps err for operation op, masking the server's secrets.
func (g *Gateway) serverErr(op string, err error) error { return g.shared.conns[0].ServerErr(op, err) }

// mask replaces the server's secrets in s with "***": those of its
// configuration, and for a user's session that user's own.
func (g *Gateway) mask(s string) string { return g.masker(s) }

// maskFor is mask for what the user ctx names is shown: on a server that
// takes user secrets, that user's own are masked as well, never another
// user's, so that no user can test a guess at someone else's secret by
// seeing it come back masked.
func (g *Gateway) maskFor(ctx context.Context, s string) string {
	s = g.masker(s)
	if !g.cfg.TakesUserSecrets() {
		return s
	}
	g.mu.Lock()
	u := g.users[UserFrom(ctx)]
	g.mu.Unlock()
	if u == nil {
		return s
	}
	return u.v.masker(s)
}
