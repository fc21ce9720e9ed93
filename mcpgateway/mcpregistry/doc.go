// Package mcpregistry finds MCP servers in a registry that speaks the
// official MCP Registry API (v0.1: GET /v0.1/servers and GET
// /v0.1/servers/{name}/versions/{version}) and turns a server's
// server.json into an mcp.json entry: a remote first (Streamable HTTP, then
// SSE, with its headers), else a package run over stdio (npm through npx,
// PyPI through uvx, OCI images through docker), with the server's
// arguments and environment variables. Secrets become ${input:...}
// password inputs, or ${user:...} when asked; a required value without a
// default is asked for or named in a *MissingValueError.
//
// A registry and what it answers are untrusted: every request is bounded
// in time and size, and a server.json with a name, URL, package or argument
// that could not be written safely (control characters, a substitution
// such as ${env:...}, a runtime flag that would run a shell or another
// package) is refused with an *InvalidServerError naming the field. No
// shell ever runs what an entry holds: the gateway starts its command
// directly.
//
// It imports mcpconfig (for the Input and RegistryRef types of the entry it
// makes) and the standard library only.
package mcpregistry
