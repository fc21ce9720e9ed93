// Package mcpgateway turns each MCP server of mcp.json (parsed by
// mcpconfig) into a [Gateway]: one tools.Tool a decision tree calls with
// six actions, list (the server's tools, searchable and paged), execute
// (call one tool), list_resources, read_resource, list_prompts and
// get_prompt. The aggregate MCP endpoint and the web API use the same
// Gateway through its methods (Execute, ListTools, ReadResource,
// Complete, Status, Logs, ...).
//
// A Gateway is the tool facade: it caches the tool list until the server
// says it changed, validates inputs against the tools' schemas, bounds
// every execute with a circuit breaker, drains before it is replaced or
// removed ([Gateway.Drain]), turns results and failures into what the
// model can act on, and reports its [Status] and every call to an
// [Observer]. The connection itself (dialling stdio, SSE or Streamable
// HTTP lazily, the handshake, lifetime, back-off after a crash loop,
// health pings, stderr, message caps, and what the server asks while a
// user's call runs: elicitation, sampling through [Options].Sampler,
// progress, logs, tasks) is owned by mcpgateway/internal/session, one
// Conn per Gateway and per user's session.
//
// Users: a call names its user with [WithUser]. A server that needs
// sign-in (OAuth, through mcpauth: [Gateway.SignIn] for a terminal,
// StartSignIn and FinishSignIn for a web callback, SignOut), takes a
// user's own secrets (${user:NAME}, from [Options].UserSecrets) or is
// marked per_user gets a session per user, idle-closed after
// [Options].UserIdle and capped at [Options].MaxUsers; [Gateway.StatusFor]
// is the status one user sees. Every error, log line and status masks the
// server's secrets, and a user's own only for that user.
//
// Use: New(cfg, opts) does no I/O; call Run (or the methods above) from
// any goroutine, and Close once done. It imports the project's tools,
// mcpconfig and mcpauth packages, its internal session package, and
// mcp-go's types; mcp-go never appears in its exported API but for
// Complete's reference and argument types.
package mcpgateway
