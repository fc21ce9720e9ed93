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
// retry carries the answers.
//
// # The one relay of 2026-07-28
//
// A 2026-07-28 call that asked its client something is suspended, not
// ended, on the replica that runs it: the question belongs to an upstream
// request running there, and a 2025-11-25 upstream's question to its
// session held there, so the call cannot move. Its retry may reach any
// replica; one that does not hold the call passes the retry on through the
// Relay (heldrelay.go), with one message kind:
//
//	kind             sender -> receiver                  idempotent  lost
//	mcp_input_retry  replica with the retry -> all       no (1)      the client is told to call again (2)
//	  (retry)        (the holder, by tag, takes it)
//	mcp_input_retry  holder -> all (the asking replica   yes         keepalive: the next one, or the
//	  (outcome)      takes it, by its reply id)                      holder's lease, speaks; outcome: (3)
//
// (1) A retry delivered twice hands the same answers to questions already
// answered, which ignore them, and takes the call over from the first wait.
// (2) The asking replica hears nothing for resumeRelayWait, then for three
// keepalives at a time: a holder whose liveness lease has gone (Replicas;
// without them, any silent one) is gone, and the client's request gets an
// error saying to call the tool again; the call, if it lives, lapses after
// InputWait. (3) The asking replica hears nothing more: after leaseTTL of
// silence from a holder whose lease lives, the client is told to call
// again, as in (2).
//
// It imports mcpgateway and tools of the project, and mcp-go's server
// package.
package mcpendpoint
