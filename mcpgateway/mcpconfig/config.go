package mcpconfig

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"slices"
	"time"
)

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
	// Inputs are the top-level "inputs" in file order (a server's own
	// inputs stay with the server that declares them).
	Inputs []Input
	// Expose is the "expose" block: what the aggregate MCP endpoint lists;
	// DefaultExpose when the file has none.
	Expose Expose
	// Warnings are non-fatal findings (unknown keys, ...), each naming the
	// file, line and column.
	Warnings []string
}

// ServerConfig is one MCP server of mcp.json, with ${env:}, ${input:},
// ${VAR} and the editor's variables already substituted (${user:} is
// substituted per user; see UserValues) and relative paths resolved against the folder of the
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
	// Prefix, when set, names the server's tools on the aggregate MCP
	// endpoint in place of Name ("" for none); see ExposedPrefix.
	Prefix *string `json:"prefix,omitempty"`
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
	// OAuth configures sign-in for an http or sse server; nil means
	// sign-in with a dynamically registered client when the server asks
	// for it (a 401 with WWW-Authenticate).
	OAuth *OAuthConfig `json:"oauth,omitempty"`
	// PerUser gives every user a session of their own even when the
	// server needs no sign-in ("per_user": true).
	PerUser bool `json:"per_user,omitempty"`
	// UserValues are the headers (of an http or sse server) and env
	// entries (of a stdio server) that take the asking user's own secrets,
	// ${user:NAME}, by the keys of Templates ("headers.Authorization",
	// "env.TOKEN"). Headers and Env hold them with every other
	// substitution done and each ${user:NAME} as written; each user's
	// session fills them in from Options.UserSecrets, so a server with
	// UserValues keeps a session (a stdio process) per user. Nil means
	// none.
	UserValues map[string]UserValue `json:"-"`

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
	// MaxCallTime bounds a call that keeps reporting progress: each
	// progress notification extends the call's deadline by CallTimeout, up
	// to MaxCallTime after it started. Zero means 10 × the call timeout.
	MaxCallTime time.Duration `json:"max_call_time,omitempty"`
	// ElicitationTimeout bounds how long a server's question waits for the
	// user; then it is declined. Zero means 5 minutes.
	ElicitationTimeout time.Duration `json:"elicitation_timeout,omitempty"`
	// Sampling lets the server ask the service's model to write a message
	// (sampling/createMessage), approved by the user (SamplingAsk) or
	// unattended (SamplingAuto); off by default.
	Sampling SamplingMode `json:"sampling,omitempty"`
	// SamplingPerCall, SamplingPerMinute and SamplingMaxInput cap what a
	// server with Sampling may ask of the model ("sampling_per_call",
	// "sampling_per_minute", "sampling_max_input" in mcp.json): requests
	// during one tools/call, requests per minute (shared by the users'
	// sessions of a per-user server), and bytes of one request's input
	// (messages, system prompt and stop sequences). Zero means the
	// defaults: 5, 30 and 64 KiB (see SamplingLimits). A request with no
	// tools/call of a user in flight is always refused.
	SamplingPerCall   int `json:"sampling_per_call,omitempty"`
	SamplingPerMinute int `json:"sampling_per_minute,omitempty"`
	SamplingMaxInput  int `json:"sampling_max_input,omitempty"`
	// MaxMessageSize bounds, in bytes, one JSON-RPC message (one line) a
	// stdio server sends ("max_message_size" in mcp.json, 4096 to 1 GiB):
	// a longer line closes the session with an error saying so, and the
	// next call starts a new process. Zero means DefaultMaxMessageSize
	// (4 MiB).
	MaxMessageSize int `json:"max_message_size,omitempty"`
	// Roots are the folders the server is told it may work in, as absolute
	// paths (sent as file:// URIs).
	Roots []string `json:"roots,omitempty"`
	// LogLevel, when set, is sent as logging/setLevel after connecting:
	// debug, info, notice, warning, error, critical, alert or emergency.
	LogLevel string `json:"log_level,omitempty"`
	// ProtocolVersion, when set, pins the MCP protocol version the gateway
	// negotiates ("2025-06-18", "2025-11-25", ...); empty lets it negotiate.
	ProtocolVersion string `json:"protocol_version,omitempty"`
	// Registry, when set, names the MCP Registry server and version the
	// entry was added from ("registry" in mcp.json); nil for an entry
	// written by hand.
	Registry *RegistryRef `json:"registry,omitempty"`
	// Pin says what happens when a tool's definition differs from the one
	// pinned at the server's first listing ("pin" in mcp.json): quarantine
	// until approved (PinBlock, the default), a warning (PinWarn), or no
	// pinning (PinOff).
	Pin PinMode `json:"pin,omitempty"`
	// Copies are the server's equivalent copies ("copies" in mcp.json),
	// tried when it fails: each is the server with the copy's transport
	// keys (type, command, args, env, cwd, url, headers, oauth, ...) in
	// place of its own, and no Copies of its own. Nil for a server
	// without copies. See AllCopies.
	Copies []ServerConfig `json:"copies,omitempty"`
	// Policy is how calls pick a copy: PolicyPriority ("" means it) or
	// PolicyRoundRobin.
	Policy string `json:"policy,omitempty"`

	// Templates holds, for every field that used a substitution (${env:},
	// ${input:}, ${VAR}, ${user:}, ${workspaceFolder}, ...), or whose relative path was resolved against the
	// mcp.json folder, the text as written in the file (key: "command",
	// "args[0]", "env.TOKEN", "url", "headers.Authorization", "cwd"). It is
	// what a user is shown instead of the substituted value (see Display).
	Templates map[string]string `json:"-"`
	// Secrets are the values substituted for ${env:} and ${input:} and the
	// values of Env and Headers, without duplicates or empty strings,
	// longest first. Mask replaces each with "***".
	Secrets []string `json:"-"`
	// Unresolved, when not empty, says why the server cannot run (an
	// ${input:} or ${env:} with no value); the gateway reports it as failed
	// with this reason and the other servers run.
	Unresolved string `json:"-"`

	// Line and Column locate the server's entry in the file, for errors.
	Line, Column int `json:"-"`
}

// UserValue is a header or env value that takes the asking user's
// secrets: literal text and ${user:NAME} references, in order.
type UserValue []UserPart

// UserPart is one part of a UserValue: the literal Text, or, when Secret
// is set, the asking user's secret of that name.
type UserPart struct {
	Text   string
	Secret string
}

// UserSecretNames returns the names of the users' own secrets the server
// takes (${user:NAME}), sorted, each once; nil when none. Each user sets
// them (PUT /users/:user/secrets/:name) before using the server.
func (s ServerConfig) UserSecretNames() []string {
	var names []string
	for _, c := range s.Copies {
		names = append(names, c.UserSecretNames()...)
	}
	for _, v := range s.UserValues {
		for _, p := range v {
			if p.Secret != "" && !slices.Contains(names, p.Secret) {
				names = append(names, p.Secret)
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// TakesUserSecrets reports whether the server, or one of its copies, takes
// the asking user's own secrets (${user:NAME}).
func (s ServerConfig) TakesUserSecrets() bool {
	if len(s.UserValues) > 0 {
		return true
	}
	for _, c := range s.Copies {
		if len(c.UserValues) > 0 {
			return true
		}
	}
	return false
}

// Default timeouts, used when ConnectTimeout or CallTimeout is zero. Servers
// started through npx need the long stdio connect timeout; the seeds use 5 s
// for remote servers.
const (
	DefaultStdioConnectTimeout  = 30 * time.Second
	DefaultRemoteConnectTimeout = 5 * time.Second
	DefaultCallTimeout          = 60 * time.Second
)

// DefaultElicitationTimeout is how long a server's question waits for the
// user when elicitation_timeout is not set.
const DefaultElicitationTimeout = 5 * time.Minute

// Limits returns how long a call may run while it reports progress and how
// long a question waits for the user, with the defaults applied.
func (s ServerConfig) Limits() (maxCall, elicitation time.Duration) {
	_, call := s.Timeouts()
	maxCall, elicitation = s.MaxCallTime, s.ElicitationTimeout
	if maxCall <= 0 {
		maxCall = 10 * call
	}
	maxCall = max(maxCall, call)
	if elicitation <= 0 {
		elicitation = DefaultElicitationTimeout
	}
	return maxCall, elicitation
}

// Default sampling caps, used when the server's are zero.
const (
	DefaultSamplingPerCall   = 5
	DefaultSamplingPerMinute = 30
	DefaultSamplingMaxInput  = 64 << 10
)

// SamplingLimits returns the sampling caps in force: requests per
// tools/call, requests per minute, and bytes of one request's input.
func (s ServerConfig) SamplingLimits() (perCall, perMinute, maxInput int) {
	perCall, perMinute, maxInput = s.SamplingPerCall, s.SamplingPerMinute, s.SamplingMaxInput
	if perCall <= 0 {
		perCall = DefaultSamplingPerCall
	}
	if perMinute <= 0 {
		perMinute = DefaultSamplingPerMinute
	}
	if maxInput <= 0 {
		maxInput = DefaultSamplingMaxInput
	}
	return perCall, perMinute, maxInput
}

// maxTimeout bounds connect_timeout and call_timeout so that seconds always
// fit a time.Duration.
const maxTimeout = 24 * time.Hour

// Timeouts returns the connect and call timeouts with the defaults applied:
// this is the one place the defaults are chosen.
func (s ServerConfig) Timeouts() (connect, call time.Duration) {
	connect, call = s.ConnectTimeout, s.CallTimeout
	if connect <= 0 {
		connect = DefaultRemoteConnectTimeout
		if s.Transport == TransportStdio {
			connect = DefaultStdioConnectTimeout
		}
	}
	if call <= 0 {
		call = DefaultCallTimeout
	}
	return connect, call
}

// applyDefaults fills the zero timeouts, so that what Parse returns, what
// /api/servers shows and what Equal compares are the values in force.
func (s *ServerConfig) applyDefaults() {
	s.ConnectTimeout, s.CallTimeout = s.Timeouts()
}

// Validate checks a Config built in code the way Parse checks a file:
// transports, commands and urls, globs, timeouts, duplicate names and tool
// names that collide. It returns nil or one *ConfigError per problem joined
// with errors.Join; positions come from each server's Line and Column.
func (c *Config) Validate() error {
	var errs []error
	for i := range c.Servers {
		s := &c.Servers[i]
		for _, p := range s.problems() {
			errs = append(errs, &ConfigError{File: c.File, Line: s.Line, Column: s.Column, Server: s.Name, Msg: p.msg})
		}
		for j := range s.Copies {
			cp := &s.Copies[j]
			for _, p := range cp.problems() {
				errs = append(errs, &ConfigError{File: c.File, Line: cp.Line, Column: cp.Column, Server: s.Name, Msg: fmt.Sprintf("copies[%d]: %s", j, p.msg)})
			}
		}
	}
	for _, e := range c.crossCheck() {
		errs = append(errs, e)
	}
	return joinErrors(errs)
}

// problem is a finding about one field of a server ("" for the server).
type problem struct {
	field, msg string
}

// problems checks one server on its own. Parse maps each field to the
// position it was read from.
func (s *ServerConfig) problems() []problem {
	var ps []problem
	if s.Name == "" {
		ps = append(ps, problem{"name", "missing server name"})
	}
	switch s.Transport {
	case TransportStdio:
		if s.Command == "" {
			ps = append(ps, problem{"", "missing command (a stdio server needs command or server_script_path)"})
		}
	case TransportHTTP, TransportSSE:
		if s.URL == "" {
			ps = append(ps, problem{"", fmt.Sprintf("missing url (an %s server needs one)", s.Transport)})
		} else if s.Unresolved == "" {
			if msg := checkURL(s.URL); msg != "" {
				ps = append(ps, problem{"url", fmt.Sprintf("invalid url %q: %s", s.Display().URL, msg)})
			}
		}
	default:
		ps = append(ps, problem{"type", fmt.Sprintf("unknown type %q (want stdio, http or sse)", s.Transport)})
	}
	ps = append(ps, s.OAuth.problems()...)
	if s.OAuth != nil && s.Transport == TransportStdio {
		ps = append(ps, problem{"oauth", "oauth is for http and sse servers"})
	}
	for _, list := range []struct {
		name  string
		globs []string
	}{{"allow", s.Allow}, {"deny", s.Deny}} {
		for i, g := range list.globs {
			if _, err := path.Match(g, ""); err != nil || g == "" {
				ps = append(ps, problem{fmt.Sprintf("tools.%s[%d]", list.name, i),
					fmt.Sprintf("bad tools.%s pattern %q (want a name or a path.Match glob)", list.name, g)})
			}
		}
	}
	for _, t := range []struct {
		name string
		d    time.Duration
	}{{"connect_timeout", s.ConnectTimeout}, {"call_timeout", s.CallTimeout}} {
		if t.d < 0 || t.d > maxTimeout {
			ps = append(ps, problem{t.name, fmt.Sprintf("%s must be a number of seconds > 0 and <= %d", t.name, int(maxTimeout.Seconds()))})
		}
	}
	for _, l := range s.intLimits() {
		if *l.val != 0 && (*l.val < l.min || *l.val > l.max) {
			ps = append(ps, problem{l.key, l.bounds()})
		}
	}
	if !s.Sampling.valid() {
		ps = append(ps, problem{"sampling", errSamplingValue(fmt.Sprintf("%q", string(s.Sampling)))})
	}
	if !s.Pin.valid() {
		ps = append(ps, problem{"pin", errPinValue(fmt.Sprintf("%q", string(s.Pin)))})
	}
	if s.Policy != "" && s.Policy != PolicyPriority && s.Policy != PolicyRoundRobin {
		ps = append(ps, problem{"policy", fmt.Sprintf("policy must be %q or %q, got %q", PolicyPriority, PolicyRoundRobin, s.Policy)})
	}
	if len(s.Copies) > MaxCopies {
		ps = append(ps, problem{"copies", fmt.Sprintf("copies has %d entries; at most %d are allowed", len(s.Copies), MaxCopies)})
	}
	return ps
}

// checkURL returns why u is not an http(s) URL with a host, or "".
func checkURL(u string) string {
	parsed, err := url.Parse(u)
	switch {
	case err != nil:
		return "not a url"
	case parsed.Scheme != "http" && parsed.Scheme != "https":
		return "want an http:// or https:// url"
	case parsed.Host == "":
		return "missing host"
	}
	return ""
}

// crossCheck finds problems between servers: the same name twice (possible
// in the list shape and in code) and tool names that collide after clean-up.
func (c *Config) crossCheck() []*ConfigError {
	var errs []*ConfigError
	byName := make(map[string]*ServerConfig)
	byTool := make(map[string]*ServerConfig)
	for i := range c.Servers {
		s := &c.Servers[i]
		if first, ok := byName[s.Name]; ok {
			errs = append(errs, &ConfigError{File: c.File, Line: s.Line, Column: s.Column, Server: s.Name,
				Msg: fmt.Sprintf("server name given twice (first at %d:%d)", first.Line, first.Column)})
			continue
		}
		byName[s.Name] = s
		tool := ToolName(s.Name)
		if first, ok := byTool[tool]; ok {
			errs = append(errs, &ConfigError{File: c.File, Line: s.Line, Column: s.Column, Server: s.Name,
				Msg: fmt.Sprintf("tool name %q collides with server %q at %d:%d; rename one", tool, first.Name, first.Line, first.Column)})
			continue
		}
		byTool[tool] = s
	}
	return errs
}

// joinErrors is errors.Join that returns the error itself when there is
// only one, so that errors.As and a plain %v read naturally.
func joinErrors(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}
