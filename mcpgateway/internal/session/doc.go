// Package session owns the connections to one MCP server: a [Conn] dials
// its sessions over stdio (the child process, its process group, its
// stderr), Streamable HTTP or SSE, runs the handshake (server/discover,
// then initialize unless the server speaks only 2026-07-28; a [Handshake]
// remembers per server that it took initialize: discover.go), keeps one
// live [Session] published and replaces it when it dies, backs off after a
// crash loop, pings it (Options.HealthInterval), caps what the server
// sends (max_message_size, the waits mcp-go leaves unbounded), and ends
// every session, process and goroutine it started on [Conn.Close].
//
// It also answers what a server asks while a call runs, for that call's
// user only: progress (moving the call's deadline on), elicitation,
// sampling (through Options.Sampler, or the caller's own [ClientSampler]),
// log messages (kept, and relayed as warnings or to a [ClientLogger]) and
// roots, whether they come as requests of their own or, on 2026-07-28, as
// input_required results (at most [MaxInputRounds] requests); on
// 2026-07-28 it follows list changes and resource subscriptions on a
// subscriptions/listen stream; and it runs the tools a server runs only as
// tasks (2025-11-25 tasks; not the 2026-07-28 Tasks extension).
//
// Use: New(cfg, opts, logger, mask) does no I/O. [Conn.Session] returns
// the live session, connecting if needed; [Conn.CallTool] sends a
// tools/call on it, [Conn.Do] any other request through the session's
// mcp-go client, and [Conn.ListTools] lists the tools with their schemas
// as sent. [Conn.Status] is a snapshot for a status page. Errors name the
// server and are masked ([ServerError]); the sentinels are in errors.go.
//
// The package is mcpgateway's: it knows nothing of the gateway's tool
// cache, circuit, draining or users' pools, which sit on top. It imports
// the project's tools, mcpconfig, mcpauth and internal/ring (what a server
// logged, a child's stderr) packages, and mcp-go.
package session
