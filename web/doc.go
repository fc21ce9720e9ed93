// Package web serves Elysia-Go's HTTP API with gin: the tree and conversation
// routes, query streaming over Server-Sent Events and WebSocket, the
// Elysia-compatible init and tools routes, the MCP server routes, health,
// readiness and Prometheus metrics, bearer-key auth, and the embedded web
// UI. It runs web/browsersafety's checks (Host, Origin and Content-Type)
// before every route and sets its headers on every response.
//
// The routes and their bodies are those of DESIGN.md, "HTTP API"; web owns
// their types (dto.go). web uses the tree package directly (a
// *tree.Manager holds the trees and conversations) and reaches everything
// else through the small interfaces declared in interfaces.go: the query
// runner, the database (which persist satisfies) and the MCP servers
// (which cmd satisfies over the gateways, so that web never imports
// mcpgateway). It imports the project's tree and tools packages (and its
// own ui sub-package). gin types leave this package only for its own
// sub-packages, through the Kit of a RouteSet (kit.go).
//
// The sign-in and user-secret routes live on top of web, in web/signin,
// a RouteSet like the next.
//
// The routes of Weaviate Elysia's frontend (user and tree configs, saved
// conversations, collections, feedback, follow-up suggestions) live on top
// of web, in web/elysiaapi: a RouteSet passed in Options.Routes, which
// serves them with web's one set of auth and body helpers and its one
// error mapper. web keeps the user config that POST /init/user and
// /init/tree show (userconfig.go).
//
// Errors are mapped to HTTP statuses in one place, on tree's sentinels
// (tree.ErrNotFound, tree.ErrBusy, tree.ErrInvalid, tree.ErrExists), the
// tools package's (tools.ErrInvalidArguments, tools.ErrUnknownTool) and
// [ErrUnavailable].
package web
