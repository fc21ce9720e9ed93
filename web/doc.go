// Package web serves Elysia-Go's HTTP API with gin: the tree and conversation
// routes, query streaming over Server-Sent Events and WebSocket, the
// Elysia-compatible init and tools routes, the MCP server routes, health,
// readiness and Prometheus metrics, bearer-key auth, the browser safety
// checks (Host, Origin and Content-Type, see browsersafety.go), and the
// embedded web UI.
//
// The routes and their bodies are those of DESIGN.md, "HTTP API"; web owns
// their types (dto.go). web uses the tree package directly (a
// *tree.Manager holds the trees and conversations) and reaches everything
// else through the small interfaces declared in interfaces.go: the query
// runner, the database (which persist satisfies) and the MCP servers
// (which cmd satisfies over the gateways, so that web never imports
// mcpgateway). It imports the project's tree and tools packages (and its
// own ui sub-package). gin types never leave this package.
//
// Errors are mapped to HTTP statuses in one place, on tree's sentinels
// (tree.ErrNotFound, tree.ErrBusy, tree.ErrInvalid, tree.ErrExists), the
// tools package's (tools.ErrInvalidArguments, tools.ErrUnknownTool) and
// [ErrUnavailable].
package web
