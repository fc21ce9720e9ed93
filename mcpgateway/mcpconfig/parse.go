package mcpconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// LoadOptions configures Load and Parse. A nil *LoadOptions means the
// defaults below; the struct is copied on entry.
type LoadOptions struct {
	// LookupEnv reads environment variables for ${env:VAR}, the
	// ELYSIA_INPUT_<ID> input values and MCP_URL. Nil means os.LookupEnv.
	LookupEnv func(name string) (string, bool)
	// Prompt asks the operator for an input that has no ELYSIA_INPUT_<ID>
	// variable. It is called at most once per input and only for enabled
	// servers; when it returns an error the input's default is used, or,
	// without one, the server is unresolved with that error as the reason.
	// Nil means never prompt: cmd sets a terminal prompter at start-up
	// only, never on a reload or without a terminal.
	Prompt func(in Input) (string, error)
	// BaseDir is the folder relative paths (command, cwd, envFile,
	// server_script_path) resolve against and ${workspaceFolder} stands
	// for. "" means the folder of the file.
	BaseDir string
	// Logger receives each warning at level Warn. Nil means discard.
	Logger *slog.Logger
}

// mcpURLServer is the server MCP_URL adds.
const mcpURLServer = "mcp_server"

// Load reads and parses the mcp.json file at path; see Parse. A file that
// cannot be read is a *ConfigError that also unwraps to the fs error
// (errors.Is(err, fs.ErrNotExist) works).
func Load(path string, opts *LoadOptions) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		msg := err.Error()
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			msg = "cannot read: " + pe.Err.Error()
		}
		return nil, &ConfigError{File: path, Msg: msg, Err: err}
	}
	return Parse(path, data, opts)
}

// Parse parses mcp.json data read from file (used in messages and, unless
// opts.BaseDir is set, to resolve relative paths). It accepts the VS Code
// shape {"inputs": [...], "servers": {name: {...}}}, the Claude Desktop and
// Cursor shape {"mcpServers": {name: {...}}}, Zed's {"context_servers":
// {...}}, opencode's {"mcp": {...}} and the list shape {"servers":
// [{"name": ...}]} or [...], with // and /* */ comments and trailing
// commas as VS Code allows; a file with none of them is an error. Servers
// keep file order; when MCP_URL is set and not empty a streamable HTTP
// server "mcp_server" is added after them, unless the file already has a
// server with that tool name (the file wins, with a warning).
//
// ${workspaceFolder} is supported and means the mcp.json folder. A server
// whose ${env:} or ${input:} has no value is returned with Unresolved set,
// so the other servers still run.
//
// Any problem in the file makes Parse return a nil Config and an error
// made of *ConfigError values (joined with errors.Join when several), each
// matching ErrInvalidConfig.
func Parse(file string, data []byte, opts *LoadOptions) (*Config, error) {
	var o LoadOptions
	if opts != nil {
		o = *opts
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.BaseDir == "" {
		o.BaseDir = filepath.Dir(file)
		if abs, err := filepath.Abs(o.BaseDir); err == nil {
			o.BaseDir = abs
		}
	}
	p := &parser{file: file, opts: o, cfg: &Config{File: file, Expose: DefaultExpose()},
		inputs: make(map[string]Input), inputVals: make(map[string]inputValue)}
	root, oerrs := decodeTree(data)
	p.lines = newLineIndex(data)
	for _, e := range oerrs {
		if e.first >= 0 {
			line, col := p.lines.position(e.first)
			e.msg += fmt.Sprintf(" (first at %d:%d)", line, col)
		}
		p.errAt(e.off, "", "%s", e.msg)
	}
	if root != nil {
		p.top(root)
	}
	p.addMCPURL()
	for _, e := range p.cfg.crossCheck() {
		if len(p.errs) < maxProblems {
			p.errs = append(p.errs, e)
		}
	}
	for _, w := range p.cfg.Warnings {
		o.Logger.Warn("mcp.json warning", "warning", w)
	}
	if len(p.errs) > 0 {
		// A misspelt key is likely why a server is missing what it needs
		// ("comand"): say so beside the error, which a warning is not.
		for _, w := range p.typos {
			if len(p.errs) < maxProblems {
				p.errs = append(p.errs, w)
			}
		}
		return nil, joinErrors(p.errs)
	}
	for i := range p.cfg.Servers {
		p.cfg.Servers[i].applyDefaults()
	}
	return p.cfg, nil
}

// parser holds the state of one Parse call.
type parser struct {
	file  string
	lines *lineIndex
	opts  LoadOptions
	cfg   *Config
	errs  []error
	// typos are the unknown keys of servers that look like misspelt
	// known ones, reported with the errors when there are any.
	typos     []*ConfigError
	inputs    map[string]Input      // top-level inputs by id
	inputVals map[string]inputValue // values of top-level inputs, once found
}

// maxProblems bounds the errors and the warnings reported for one file:
// past that the operator learns nothing more, and a pathological file
// would cost time.
const maxProblems = 50

func (p *parser) errAt(off int, server, format string, args ...any) {
	if len(p.errs) > maxProblems {
		return
	}
	line, col := p.lines.position(off)
	e := &ConfigError{File: p.file, Line: line, Column: col, Server: server, Msg: fmt.Sprintf(format, args...)}
	switch {
	case len(p.errs) < maxProblems:
		p.errs = append(p.errs, e)
	case len(p.errs) == maxProblems:
		e.Server, e.Msg = "", "too many errors"
		p.errs = append(p.errs, e)
	}
}

func (p *parser) warnAt(off int, server, format string, args ...any) {
	if len(p.cfg.Warnings) > maxProblems {
		return
	}
	line, col := p.lines.position(off)
	e := &ConfigError{File: p.file, Line: line, Column: col, Server: server, Msg: fmt.Sprintf(format, args...)}
	switch {
	case len(p.cfg.Warnings) < maxProblems:
		p.cfg.Warnings = append(p.cfg.Warnings, e.Error())
	case len(p.cfg.Warnings) == maxProblems:
		e.Server, e.Msg = "", "too many warnings"
		p.cfg.Warnings = append(p.cfg.Warnings, e.Error())
	}
}

// is reports whether n has kind k, recording "<what> must be <k>" if not.
func (p *parser) is(n *jnode, k jkind, server, what string) bool {
	if n.kind != k {
		p.errAt(n.off, server, "%s must be %s, got %s", what, k, n.kind)
		return false
	}
	return true
}

// top dispatches on the shape of the file.
func (p *parser) top(root *jnode) {
	if root.kind == jArray {
		p.serverList(root)
		return
	}
	if !p.is(root, jObject, "", "the top level") {
		return
	}
	found := false
	for _, m := range root.members { // inputs first: servers may precede them
		if m.key == "inputs" {
			p.cfg.Inputs = p.inputList(m.val, "")
			for _, in := range p.cfg.Inputs {
				p.inputs[in.ID] = in
			}
		}
	}
	for _, m := range root.members {
		switch m.key {
		case "inputs":
		case "expose":
			p.expose(m.val)
		case "servers", "mcpServers":
			found = true
			switch {
			case m.val.kind == jArray && m.key == "servers":
				p.serverList(m.val)
			case m.val.kind == jObject:
				for _, s := range m.val.members {
					p.server(s.key, s.keyOff, s.val, false)
				}
			case m.key == "servers":
				p.errAt(m.val.off, "", "servers must be an object or an array, got %s", m.val.kind)
			default:
				p.errAt(m.val.off, "", "mcpServers must be an object, got %s", m.val.kind)
			}
		case "context_servers", "mcp": // Zed's and opencode's (dialects.go)
			found = true
			p.dialectServers(m)
		case "$schema": // an editor's hint (opencode's files carry one)
		default:
			p.warnAt(m.keyOff, "", "unknown key %q ignored", m.key)
		}
	}
	if !found {
		p.noServers(root)
	}
}

// serverList reads the seeds' list shape: an array of objects with "name".
func (p *parser) serverList(list *jnode) {
	for _, e := range list.elems {
		if !p.is(e, jObject, "", "a server") {
			continue
		}
		name := ""
		i := slices.IndexFunc(e.members, func(m jmember) bool { return m.key == "name" })
		if i < 0 {
			p.errAt(e.off, "", `server has no "name"`)
			continue
		}
		if n := e.members[i].val; p.is(n, jString, "", "name") {
			if name = n.str; name == "" {
				p.errAt(n.off, "", "server name is empty")
				continue
			}
			p.server(name, e.off, e, true)
		}
	}
}

// server reads one server entry at off (its key, or its object in a list).
func (p *parser) server(name string, off int, obj *jnode, inList bool) {
	if !p.is(obj, jObject, name, "a server") {
		return
	}
	if name == "" {
		p.errAt(off, "", "server name is empty")
		return
	}
	line, col := p.lines.position(off)
	sp := &serverParse{p: p, name: name, fieldOff: map[string]int{"": off}, local: map[string]Input{}, localVals: map[string]inputValue{}, userOffs: map[string]int{}}
	sp.s = ServerConfig{Name: name, Enabled: true, Line: line, Column: col}
	nerr := len(p.errs)
	for _, m := range obj.members { // before the others: prompts depend on it
		switch m.key {
		case "enabled":
			if p.is(m.val, jBool, name, "enabled") {
				sp.s.Enabled = sp.s.Enabled && m.val.boolean
			}
		case "disabled":
			if p.is(m.val, jBool, name, "disabled") {
				sp.s.Enabled = sp.s.Enabled && !m.val.boolean
			}
		case "inputs":
			for _, in := range p.inputList(m.val, name) {
				sp.local[in.ID] = in
			}
		}
	}
	for _, m := range obj.members {
		sp.member(m, inList)
	}
	if len(p.errs) > nerr { // a wrong field would only cause more noise
		return
	}
	sp.finish()
	if len(p.errs) > nerr {
		return
	}
	for _, pr := range sp.s.problems() {
		off, ok := sp.fieldOff[pr.field]
		if !ok {
			off = sp.fieldOff[""]
		}
		p.errAt(off, name, "%s", pr.msg)
	}
	sp.copies()
	p.cfg.Servers = append(p.cfg.Servers, sp.s)
}

// serverParse is the state of one server while it is read.
type serverParse struct {
	p        *parser
	name     string
	s        ServerConfig
	fieldOff map[string]int // where each field was read, for errors
	// urlKey is the key the server's URL was read from: url, or another
	// client's name for it (serverUrl, httpUrl); "" before.
	urlKey string

	local     map[string]Input      // the server's own inputs
	localVals map[string]inputValue // their values
	secrets   []string

	// userField is the env or header value being expanded ("env.TOKEN"),
	// where ${user:NAME} may stand; "" elsewhere. userOffs is where each
	// value's first ${user:} is, for errors.
	userField string
	userOffs  map[string]int

	command, script, cwd, envFile *text
	args                          []text
	transport                     string
	// copyList is the "copies" array, read once the server is (copies).
	copyList *jnode
}

// text is a string from the file after substitution.
type text struct {
	val, written string
	templated    bool // val differs from written through ${...}
	off          int
	// user is set when the value takes the asking user's secrets; val
	// then holds each ${user:NAME} as written.
	user UserValue
}

// logLevels are the MCP (syslog) log levels log_level takes.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// protocolVersion matches an MCP protocol version.
var protocolVersion = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

func (sp *serverParse) member(m jmember, inList bool) {
	p, name, v := sp.p, sp.name, m.val
	sp.fieldOff[m.key] = v.off
	str := func() *text {
		if !p.is(v, jString, name, m.key) {
			return nil
		}
		t := sp.expand(v)
		return &t
	}
	switch m.key {
	case "enabled", "disabled", "inputs":
	case "name":
		if !inList {
			p.warnAt(m.keyOff, name, `key "name" ignored: the server is named by its key`)
		}
	case "type", "transport":
		if p.is(v, jString, name, m.key) {
			t := normalTransport(v.str)
			if sp.transport != "" && t != sp.transport {
				p.errAt(v.off, name, "type and transport disagree")
			}
			sp.transport = t
			sp.fieldOff["type"] = v.off
		}
	case "command":
		sp.command = str()
	case "server_script_path":
		sp.script = str()
	case "cwd":
		sp.cwd = str()
	case "envFile":
		sp.envFile = str()
	case "url", "serverUrl", "httpUrl": // serverUrl: Windsurf's; httpUrl: Gemini CLI's Streamable HTTP
		if sp.urlKey != "" {
			p.errAt(m.keyOff, name, "give one of url, serverUrl and httpUrl, not %q beside %q", m.key, sp.urlKey)
			return
		}
		sp.urlKey = m.key
		sp.fieldOff["url"] = v.off
		if m.key == "httpUrl" && sp.transport == "" {
			sp.transport = TransportHTTP
		}
		if t := str(); t != nil {
			sp.s.URL = t.val
			sp.template("url", t)
		}
	case "prefix":
		sp.prefix(v)
	case "description", "branch":
		if p.is(v, jString, name, m.key) {
			if m.key == "branch" {
				sp.s.Branch = v.str
			} else {
				sp.s.Description = v.str
			}
		}
	case "args":
		if v.kind != jArray {
			p.errAt(v.off, name, "args must be an array of strings, got %s", v.kind)
			return
		}
		for _, e := range v.elems {
			if e.kind != jString {
				p.errAt(e.off, name, "args must be an array of strings, got %s in it", e.kind)
				continue
			}
			sp.args = append(sp.args, sp.expand(e))
		}
	case "env", "headers":
		sp.stringMap(m.key, v)
	case "tools":
		sp.tools(v)
	case "connect_timeout", "call_timeout", "max_call_time", "elicitation_timeout":
		d, ok := seconds(v)
		if !ok {
			p.errAt(v.off, name, "%s must be a number of seconds > 0 and <= %d", m.key, int(maxTimeout.Seconds()))
			return
		}
		switch m.key {
		case "connect_timeout":
			sp.s.ConnectTimeout = d
		case "call_timeout":
			sp.s.CallTimeout = d
		case "max_call_time":
			sp.s.MaxCallTime = d
		default:
			sp.s.ElicitationTimeout = d
		}
	case "eager":
		if p.is(v, jBool, name, m.key) {
			sp.s.Eager = v.boolean
		}
	case "per_user":
		if p.is(v, jBool, name, m.key) {
			sp.s.PerUser = v.boolean
		}
	case "oauth":
		sp.oauth(v)
	case "registry":
		sp.registry(v)
	case "sampling":
		sp.sampling(v)
	case "pin":
		sp.pin(v)
	case "copies":
		sp.copyList = v
	case "policy":
		sp.policy(v)
	case "log_level":
		if p.is(v, jString, name, m.key) {
			if !slices.Contains(logLevels, v.str) {
				p.errAt(v.off, name, "log_level must be one of %s, got %q", strings.Join(logLevels, ", "), v.str)
				return
			}
			sp.s.LogLevel = v.str
		}
	case "protocol_version":
		if p.is(v, jString, name, m.key) {
			if !protocolVersion.MatchString(v.str) {
				p.errAt(v.off, name, "protocol_version must be a date like \"2025-11-25\", got %q", v.str)
				return
			}
			sp.s.ProtocolVersion = v.str
		}
	case "max_message_size", "sampling_per_call", "sampling_per_minute", "sampling_max_input":
		sp.intLimit(m.key, v)
	case "roots":
		if v.kind != jArray {
			p.errAt(v.off, name, "roots must be an array of folder paths, got %s", v.kind)
			return
		}
		for _, e := range v.elems {
			if e.kind != jString || e.str == "" {
				p.errAt(e.off, name, "roots must be an array of folder paths, got %s in it", e.kind)
				continue
			}
			t := sp.expand(e)
			sp.resolvePath(&t)
			sp.s.Roots = append(sp.s.Roots, filepath.Clean(t.val))
		}
	default:
		if k := closestKey(m.key, serverKeys); k != "" {
			msg := fmt.Sprintf("unknown key %q ignored: did you mean %q?", m.key, k)
			p.warnAt(m.keyOff, name, "%s", msg)
			line, col := p.lines.position(m.keyOff)
			p.typos = append(p.typos, &ConfigError{File: p.file, Line: line, Column: col, Server: name, Msg: msg})
			return
		}
		p.warnAt(m.keyOff, name, "unknown key %q ignored", m.key)
	}
}
