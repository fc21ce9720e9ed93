// Package mcpconfig reads mcp.json: the three dialects (VS Code "servers",
// Claude "mcpServers", a bare list), JSONC comments and trailing commas,
// positions of every problem (file:line:column), ${env:…}, ${input:…} and
// ${user:…} substitution, "inputs", envFile files, the per-server limits
// and "oauth" block, validation, and the masked forms of a server's
// configuration (Mask, Display, LogValue) that may be shown or logged.
//
// Use Load (or Parse for bytes already read) to get a [Config]; each
// [ServerConfig] in it is what mcpgateway.New takes. Every problem is a
// *[ConfigError] matching [ErrInvalidConfig]; several are joined so the
// operator sees them all. A ServerConfig holds its secrets (header and env
// values, inputs, OAuth client secrets and keys, URL userinfo) in the clear
// for the code that uses them; what is shown or logged goes through
// [ServerConfig.Mask], [ServerConfig.Display] or [ServerConfig.LogValue].
//
// [Edit] and [EditFile] change one server entry of a file (add, update,
// remove) in any dialect, keeping its comments and layout, and write it
// atomically; `elysia mcp add` uses them.
//
// It imports no package of the project; its one third-party dependency is
// github.com/tailscale/hujson, for JSON with comments.
package mcpconfig
