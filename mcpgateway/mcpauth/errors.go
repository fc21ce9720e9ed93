package mcpauth

import (
	"errors"
	"fmt"
)

// ErrSignInRequired is matched (errors.Is) by the error of a call to a
// server the asking user has not signed in to (or whose sign-in expired and
// cannot be refreshed). The user signs in (the UI's Connect, or `elysia mcp
// login`) and tries again.
var ErrSignInRequired = errors.New("sign-in required")

// ErrResourceMismatch is matched by the error of a sign-in refused because
// the server's protected-resource metadata names another resource.
var ErrResourceMismatch = errors.New("resource metadata names another server")

// SignInRequiredError says which user must sign in to which server, and
// why. It matches ErrSignInRequired.
type SignInRequiredError struct {
	Server string
	User   string
	// Scopes, when set, are the scopes the sign-in must ask for (a
	// step-up the server asked for).
	Scopes []string
	// Reason says why ("no token", "the refresh token was refused", ...).
	Reason string
}

func (e *SignInRequiredError) Error() string {
	return fmt.Sprintf("user %q must sign in to server %q (%s)", e.User, e.Server, e.Reason)
}

// Is reports whether target is ErrSignInRequired.
func (e *SignInRequiredError) Is(target error) bool { return target == ErrSignInRequired }

// ErrNoToken is returned by a TokenStore's Get when it holds no token for
// the key.
var ErrNoToken = errors.New("no token stored")

// ErrUnknownState is matched by the error of a web sign-in's callback
// (mcpgateway's FinishSignIn) when the state is unknown, expired, already
// used, or another user's.
var ErrUnknownState = errors.New("unknown or expired sign-in state")

// ErrTooManySignIns is matched by the error of a web sign-in's start
// (mcpgateway's StartSignIn, PendingSignIns.Put) when the user, or
// all users together, have as many web sign-ins waiting for their callback
// as PendingSignIns keeps (MaxPendingSignInsPerUser, MaxPendingSignIns).
var ErrTooManySignIns = errors.New("too many sign-ins waiting")

// ErrRedirectRefused is matched (with errors.Is) by the error of a request
// whose redirect the gateway refused to follow: an MCP server's redirect to
// another origin (its token and headers go to its own origin only), any
// redirect of a token, registration or revocation request, and a discovery
// redirect to a URL discovery would not fetch in the first place.
var ErrRedirectRefused = errors.New("redirect refused")

// errNotHere says a metadata URL answered 4xx: try the next one.
var errNotHere = errors.New("no metadata here")
