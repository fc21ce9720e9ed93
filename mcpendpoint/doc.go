// Package mcpendpoint is the aggregate MCP endpoint: the service as one MCP
// server over every configured server (DESIGN.md, "The aggregate MCP
// endpoint"). It serves Streamable HTTP (with per-user session ids), the
// legacy SSE transport and stdio on mcp-go's server package, lists the
// servers' tools as mcp.json's "expose" block says (every tool prefixed,
// the gateway tools, or search), and routes every call through the
// gateway, so that its breaker, validation, per-user sessions, sign-in,
// masking, logs and metrics apply.
//
// # Protocol versions
//
// A client of 2025-11-25 (or older) has a session: on /mcp the replicas
// of the service share it (shared.go), with the relays its
// server-initiated requests and resumable call streams need. A client of
// 2026-07-28 has none: each request carries its version, client info and
// capabilities, and whichever replica it reaches answers it, reading and
// writing no session (ServeMCP sends it past all of the session
// machinery). What a call must ask such a client becomes an input_required
// result with a sealed requestState (held.go, state.go), and the client's
// retry carries the answers to the replica holding the call.
//
// It imports mcpgateway and tools of the project, and mcp-go's server
// package.
package mcpendpoint
