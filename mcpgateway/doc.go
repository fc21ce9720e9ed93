// Package mcpgateway parses and validates mcp.json and turns each configured
// MCP server into a [Gateway]: one lazily connected session per server
// (stdio, SSE or Streamable HTTP), exposed to decision trees as a single
// tools.Tool with the actions list and execute.
//
// It imports only the project's tools package; mcp-go types never appear in
// its exported API.
package mcpgateway
