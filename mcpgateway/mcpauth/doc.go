// Package mcpauth is the OAuth 2.1 client of a remote MCP server, one
// [Authorizer] per (server, user): discovery of the protected resource and
// its authorization server (RFC 9728, RFC 8414), the client identity (a
// Client ID Metadata Document, a pre-registered client or dynamic
// registration, RFC 7591), the authorization code flow with PKCE and the
// resource indicator (RFC 8707, RFC 9207's iss), client credentials with a
// secret or a private_key_jwt assertion (RFC 7523), the grants that need no
// user and present a JWT as the RFC 7523 jwt-bearer grant (a workload's
// JWT, SEP-1933; an enterprise IdP's ID-JAG, got by exchanging an ID token
// there, RFC 8693: jwtbearer.go), refresh, step-up and revocation
// (RFC 7009), with the 2026-07-28 rules: the issuer compared
// after normalisation across the metadata and exactly against iss
// (issuer.go), a sign-in at the new authorization server when the
// resource moves (migration.go), and DPoP-bound tokens where the server
// asks for them (RFC 9449, dpop.go). [NewRoundTripper] puts the configured
// headers and the user's token on a session's requests and answers a 401,
// a DPoP nonce challenge or a 403 insufficient_scope; [ServerRedirects]
// keeps those requests on the server's origin, and the OAuth requests
// follow no redirect.
//
// Tokens live in a [TokenStore], web sign-ins waiting for their callback
// in a [PendingSignIns] (both shared by every replica in a deployment;
// [MemoryTokenStore] and [MemoryPendingSignIns] are for one process). The
// gateway owns the sign-in entry points (SignIn, StartSignIn,
// FinishSignIn, SignOut) and calls the Authorizer for them. Tokens,
// client secrets, PKCE verifiers and the JWTs of the grants are never in
// errors or logs.
//
// It imports mcpconfig and golang.org/x/oauth2, and no other package of
// the project.
package mcpauth
