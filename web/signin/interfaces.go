package signin

import "context"

// SignIns signs users in to the MCP servers that ask for it (OAuth), for
// the /oauth routes. Safe for concurrent use. cmd satisfies it over the
// gateways.
//
// server is a server's name or its gateway tool's name. An unknown server
// matches tree.ErrNotFound; a server that takes no sign-in matches
// tools.ErrInvalidArguments. Other errors are failures of the server or its
// authorization server, whose text is shown: it must name the server and
// hold no secret.
type SignIns interface {
	// StartSignIn begins st.User's sign-in to st.Server and returns the
	// authorization server's URL to send the browser to, and the server's
	// own name (st.Server may be another name of it, as the tree's id):
	// the answer comes back to the redirect URI st.CallbackOrigin +
	// "/oauth/callback/" + that name, path-escaped.
	// The state in it is bound to the user and may be used once, within
	// minutes; st.Binding is kept with it for Callback.Check. Beyond
	// the service's caps the error matches ErrTooMany.
	StartSignIn(ctx context.Context, st Start) (authURL, server string, err error)
	// FinishSignIn completes the sign-in whose state came back in cb,
	// once cb.Check(server, binding) accepts the one started with that
	// state, and returns the server and the user it was for. A state
	// that StartSignIn did not give, that expired or that was used already
	// matches ErrUnknownState; a failed sign-in stores nothing.
	FinishSignIn(ctx context.Context, cb Callback) (server, user string, err error)
	// SignOut forgets user's token for server and ends user's session of
	// it. Signing out twice is not an error.
	SignOut(ctx context.Context, server, user string) error
}

// UserSecrets keeps users' own secrets (what ${user:NAME} in mcp.json
// takes), which are set and deleted but never read back through the API.
// Safe for concurrent use; errors never carry a value. cmd satisfies it
// over the encrypted store.
type UserSecrets interface {
	// PutSecret stores value as user's secret name, replacing any. A new
	// name beyond the number of secrets a user may keep is an error
	// matching web.ErrLimit (409) that names the cap, and nothing changes.
	// The routes refuse a value over 16 KiB before calling it.
	PutSecret(ctx context.Context, user, name, value string) error
	// DeleteSecret forgets user's secret name; a missing one is not an
	// error.
	DeleteSecret(ctx context.Context, user, name string) error
}
