// Package web serves Elysia-Go's HTTP API with gin: the tree and conversation
// routes, query streaming over Server-Sent Events and WebSocket, the
// Elysia-compatible init and tools routes, the MCP server routes, health,
// readiness and Prometheus metrics, bearer-key auth, the browser safety
// checks (Host, Origin and Content-Type, see browsersafety.go), and the
// embedded web UI.
//
// The routes and their bodies are those of DESIGN.md, "HTTP API". Everything
// the handlers need from the rest of the service (trees, the agent loop,
// storage, MCP gateways) comes in through the small interfaces declared in
// interfaces.go, which cmd satisfies with adapters; web imports only the
// project's tools package (and its own ui sub-package). gin types never leave
// this package.
//
// Errors returned by those interfaces are mapped to HTTP statuses in one
// place (see [ErrNotFound], [ErrBusy], [ErrInvalidInput] and [ErrUnavailable],
// plus tools.ErrInvalidArguments and tools.ErrUnknownTool): adapters wrap
// their own errors with these sentinels, or implement Is to match them.
package web
