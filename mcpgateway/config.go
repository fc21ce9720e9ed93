package mcpgateway

import "time"

// Transport names as they appear in Config.Transport after parsing. Aliases
// in mcp.json ("streamable_http", "streamableHttp", ...) are normalised to
// these.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
	TransportSSE   = "sse"
)

// Config is the whole parsed mcp.json: the servers in file order.
type Config struct {
	// File is the path the config was read from ("" when parsed from bytes).
	File string
	// Servers keep the order they have in the file.
	Servers []ServerConfig
	// Warnings are non-fatal findings (unknown keys, ...), each naming the
	// file, line and column.
	Warnings []string
}

// ServerConfig is one MCP server of mcp.json, with ${env:} and ${input:}
// already substituted and relative paths resolved against the folder of the
// mcp.json file.
//
// Values that came from ${env:}/${input:}, and every value of Env and
// Headers, are secrets: they are listed in Secrets so that everything shown
// to a user or written to a log can be masked ([ServerConfig.Mask]).
type ServerConfig struct {
	// Name is the server's name as written in mcp.json.
	Name string `json:"name"`
	// Description is appended to the gateway's description. Optional.
	Description string `json:"description,omitempty"`
	// Transport is TransportStdio, TransportHTTP or TransportSSE.
	Transport string `json:"transport"`

	// Command, Args, Env, Cwd are for stdio servers. Env holds only the
	// configured variables (envFile merged in); the child also inherits the
	// small allow-list of the service's environment (see ChildEnv).
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`

	// URL and Headers are for http and sse servers.
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`

	// Enabled is false for "enabled": false or "disabled": true.
	Enabled bool `json:"enabled"`
	// Branch is the decision node to place the gateway on; "" means the root.
	Branch string `json:"branch,omitempty"`
	// Allow and Deny filter the server's tools by name or glob (path.Match).
	// An empty Allow allows every tool; Deny wins over Allow.
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
	// ConnectTimeout bounds connecting and the initialize handshake. Zero
	// means the default: 30 s for stdio, 5 s for http and sse.
	ConnectTimeout time.Duration `json:"connect_timeout,omitempty"`
	// CallTimeout bounds one tools/call. Zero means 60 s.
	CallTimeout time.Duration `json:"call_timeout,omitempty"`
	// Eager connects at start-up instead of on first use.
	Eager bool `json:"eager,omitempty"`

	// Templates holds, for every field that used ${env:} or ${input:}, the
	// text as written in the file (key: "command", "args[0]", "env.TOKEN",
	// "url", "headers.Authorization", "cwd"). It is what a user is shown
	// instead of the substituted value.
	Templates map[string]string `json:"-"`
	// Secrets are the substituted values and the values of Env and Headers.
	// Mask replaces each with "***".
	Secrets []string `json:"-"`
	// Unresolved, when not empty, says why the server cannot run (an
	// ${input:} or ${env:} with no value); the gateway reports it as failed
	// with this reason and the other servers run.
	Unresolved string `json:"-"`

	// Line and Column locate the server's entry in the file, for errors.
	Line, Column int `json:"-"`
}
