// Package mcpendpoint is the aggregate MCP endpoint: the service as one MCP
// server over every configured server (DESIGN.md, "The aggregate MCP
// endpoint"). It serves Streamable HTTP (with per-user session ids), the
// legacy SSE transport and stdio on mcp-go's server package, lists the
// servers' tools as mcp.json's "expose" block says (every tool prefixed,
// the gateway tools, or search), and routes every call through the
// gateway, so that its breaker, validation, per-user sessions, sign-in,
// masking, logs and metrics apply.
//
// It imports mcpgateway and tools of the project, and mcp-go's server
// package.
package mcpendpoint
