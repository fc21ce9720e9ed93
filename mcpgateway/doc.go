// Package mcpgateway turns each MCP server of mcp.json (parsed by
// mcpconfig) into a [Gateway]: one tools.Tool a decision tree calls with
// six actions, list (the server's tools, searchable and paged), execute
// (call one tool), list_resources, read_resource, list_prompts and
// get_prompt.
//
// A Gateway owns its connection: dialled lazily over stdio, SSE or
// Streamable HTTP, its lifetime, handshake, back-off after a crash loop,
// health pings and the server's stderr and log. It caches the tool list
// until the server says it changed, bounds every call (connect_timeout,
// call_timeout, max_call_time, a circuit breaker), drains before it is
// replaced or removed ([Gateway.Drain]) and reports its [Status] to an
// [Observer]. What the server asks while a user's call runs (elicitation,
// sampling through [Options].Sampler, progress, the status of a task it
// runs the call as) goes to that call only, bounded and masked.
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
// It imports the project's tools, mcpconfig and mcpauth packages, and
// mcp-go; mcp-go types never appear in its exported API.
package mcpgateway
