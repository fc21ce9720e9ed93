// Package web serves Elysia-Go's HTTP API with gin: the tree and conversation
// routes, the Elysia-compatible init and tools routes, the MCP server routes
// (with a streamed execute), the aggregate MCP endpoint's mount, health,
// readiness and Prometheus metrics, bearer-key auth, the drain at shutdown,
// and the embedded web UI. It runs web/browsersafety's checks (Host, Origin
// and Content-Type) before every route and sets its headers on every
// response.
//
// The routes and their bodies are those of DESIGN.md, "HTTP API"; web owns
// their types (dto.go). web uses the tree package directly (a
// *tree.Manager holds the trees and conversations) and reaches everything
// else through the small interfaces declared in interfaces.go: the database
// (which persist satisfies) and the MCP servers (which cmd satisfies over
// the gateways, so that web never imports mcpgateway). It imports the
// project's tree and tools packages and its own browsersafety, ui and
// internal/sse sub-packages.
//
// Three packages on top of web serve the rest, each a RouteSet passed in
// Options.Routes, with web's one set of auth and body helpers and its one
// error mapper through the Kit (kit.go); gin types leave web only for them:
//
//   - web/stream: the queries over Server-Sent Events and WebSocket, their
//     stop, the answers to servers' questions, the event streams of a
//     user's page, and the relay between replicas. web tells it of every
//     change made through its routes (Kit.Watch) and stops its runs and
//     sockets in Drain (Kit.TrackRun, Kit.TrackStream).
//   - web/signin: the sign-in and user-secret routes.
//   - web/elysiaapi: the routes of Weaviate Elysia's frontend (user and
//     tree configs, saved conversations, collections, feedback, follow-up
//     suggestions). web keeps the user config that POST /init/user and
//     /init/tree show (userconfig.go).
//
// Errors are mapped to HTTP statuses in one place, on tree's sentinels
// (tree.ErrNotFound, tree.ErrBusy, tree.ErrInvalid, tree.ErrExists), the
// tools package's (tools.ErrInvalidArguments, tools.ErrUnknownTool),
// browsersafety's, [ErrUnavailable], [ErrLimit] and the errors made with
// [Error], which the packages on top use for their own sentinels.
package web
