package mcpconfig

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// stringMap reads "env" or "headers": an object of strings. Numbers and
// booleans are taken as written (Claude Desktop files have them); null
// leaves the variable out, as VS Code does.
func (sp *serverParse) stringMap(key string, v *jnode) {
	p, name := sp.p, sp.name
	if !p.is(v, jObject, name, key) {
		return
	}
	out := make(map[string]string, len(v.members))
	for _, m := range v.members {
		if m.key == "" || strings.ContainsAny(m.key, "=\x00") || (key == "headers" && strings.ContainsAny(m.key, " \t\r\n:")) {
			p.errAt(m.keyOff, name, "invalid %s name %q", key, m.key)
			continue
		}
		var t text
		switch m.val.kind {
		case jString:
			sp.userField = key + "." + m.key
			t = sp.expand(m.val)
			sp.userField = ""
		case jNumber:
			t = text{val: m.val.str, written: m.val.str}
		case jBool:
			t.val = fmt.Sprint(m.val.boolean)
			t.written = t.val
		case jNull:
			continue
		default:
			p.errAt(m.val.off, name, "%s values must be strings, got %s for %q", key, m.val.kind, m.key)
			continue
		}
		out[m.key] = t.val
		sp.template(key+"."+m.key, &t)
		if t.user != nil {
			if sp.s.UserValues == nil {
				sp.s.UserValues = make(map[string]UserValue)
			}
			sp.s.UserValues[key+"."+m.key] = t.user
		}
		sp.fieldOff[key+"."+m.key] = m.val.off
	}
	if key == "env" {
		sp.s.Env = out
	} else {
		sp.s.Headers = out
	}
}

// tools reads {"allow": [...], "deny": [...]}; a bare array is an allow
// list.
func (sp *serverParse) tools(v *jnode) {
	p, name := sp.p, sp.name
	globs := func(list *jnode, field string) []string {
		if !p.is(list, jArray, name, "tools."+field) {
			return nil
		}
		var out []string
		for _, e := range list.elems {
			if e.kind != jString {
				p.errAt(e.off, name, "tools.%s must be an array of strings, got %s in it", field, e.kind)
				continue
			}
			sp.fieldOff[fmt.Sprintf("tools.%s[%d]", field, len(out))] = e.off
			out = append(out, e.str)
		}
		return out
	}
	if v.kind == jArray {
		sp.s.Allow = globs(v, "allow")
		return
	}
	if !p.is(v, jObject, name, "tools") {
		return
	}
	for _, m := range v.members {
		switch m.key {
		case "allow":
			sp.s.Allow = globs(m.val, "allow")
		case "deny":
			sp.s.Deny = globs(m.val, "deny")
		default:
			p.warnAt(m.keyOff, name, "unknown key %q in tools ignored (want allow or deny)", m.key)
		}
	}
}

// intLimit reads one of the server's intLimits: a whole JSON number within
// its bounds.
func (sp *serverParse) intLimit(key string, v *jnode) {
	for _, l := range sp.s.intLimits() {
		if l.key != key {
			continue
		}
		got := v.kind.String()
		if v.kind == jNumber {
			got = v.str
		}
		n, err := strconv.Atoi(v.str)
		if v.kind != jNumber || err != nil || n < l.min || n > l.max {
			sp.p.errAt(v.off, sp.name, "%s, got %s", l.bounds(), got)
			return
		}
		*l.val = n
	}
}

// limitWarnings says which limits the server ignores.
func (sp *serverParse) limitWarnings() {
	s := &sp.s
	for _, key := range []string{"sampling_per_call", "sampling_per_minute", "sampling_max_input"} {
		if off, ok := sp.fieldOff[key]; ok && !s.Sampling.Enabled() {
			sp.p.warnAt(off, sp.name, `%s ignored: sampling is off (set "sampling": true)`, key)
		}
	}
	if off, ok := sp.fieldOff["max_message_size"]; ok && s.Transport != TransportStdio {
		sp.p.warnAt(off, sp.name, "max_message_size ignored: it bounds the messages of stdio servers")
	}
}

// template records the text as written when it differs from the value.
func (sp *serverParse) template(key string, t *text) {
	if t == nil || (!t.templated && t.val == t.written) {
		return
	}
	if sp.s.Templates == nil {
		sp.s.Templates = make(map[string]string)
	}
	sp.s.Templates[key] = t.written
}

// unresolve records why the server cannot run; the first reason is kept
// first and each reason once.
func (sp *serverParse) unresolve(reason string) {
	if sp.s.Unresolved == "" {
		sp.s.Unresolved = reason
	} else if !strings.Contains(sp.s.Unresolved, reason) {
		sp.s.Unresolved += "; " + reason
	}
}

// resolvePath makes a relative path absolute against the base folder.
func (sp *serverParse) resolvePath(t *text) {
	if t != nil && t.val != "" && !filepath.IsAbs(t.val) {
		t.val = filepath.Join(sp.p.opts.BaseDir, t.val)
	}
}

// finish settles the transport, the command line, paths and envFile, and
// collects the secrets.
func (sp *serverParse) finish() {
	p, s := sp.p, &sp.s
	s.Transport = sp.transport
	if s.Transport == "" {
		switch {
		case sp.command != nil || sp.script != nil:
			s.Transport = TransportStdio
		case hasKey(sp.fieldOff, "url"):
			s.Transport = TransportHTTP
		default:
			p.errAt(sp.fieldOff[""], sp.name, "missing command or url (cannot tell the transport)")
			return
		}
	}
	if s.Transport == TransportStdio && hasKey(sp.fieldOff, "url") {
		p.warnAt(sp.fieldOff["url"], sp.name, "url ignored: the server uses stdio")
	}
	// An unknown type is an error of its own (Validate): no warning about
	// what that type would ignore.
	remote := s.Transport == TransportHTTP || s.Transport == TransportSSE
	if remote && (sp.command != nil || sp.script != nil) {
		p.warnAt(sp.fieldOff[""], sp.name, "command ignored: the server uses %s", s.Transport)
	}

	args := sp.args
	if sp.command != nil && strings.ContainsRune(sp.command.val, '/') {
		sp.resolvePath(sp.command)
	}
	if sp.script != nil {
		sp.resolvePath(sp.script)
		interp := sp.command
		if interp == nil {
			switch strings.ToLower(filepath.Ext(sp.script.val)) {
			case ".py":
				interp = &text{val: "python3", written: "python3"}
			case ".js", ".mjs", ".cjs":
				interp = &text{val: "node", written: "node"}
			}
		}
		if interp == nil {
			sp.command = sp.script
		} else {
			sp.command = interp
			args = append([]text{*sp.script}, args...)
		}
	}
	if sp.command != nil {
		s.Command = sp.command.val
		sp.template("command", sp.command)
	}
	for i := range args {
		s.Args = append(s.Args, args[i].val)
		sp.template(fmt.Sprintf("args[%d]", i), &args[i])
	}
	sp.resolvePath(sp.cwd)
	if sp.cwd != nil {
		s.Cwd = sp.cwd.val
		sp.template("cwd", sp.cwd)
	}
	if sp.envFile != nil {
		sp.resolvePath(sp.envFile)
		sp.readEnvFile(sp.envFile.val)
	}

	sp.checkUserValues()
	sp.limitWarnings()
	// A value that takes a user's secret is no secret as written: each
	// user's session masks it filled in (withUserSecrets).
	for k, v := range s.Env {
		if _, ok := s.UserValues["env."+k]; !ok {
			sp.secrets = append(sp.secrets, v)
		}
	}
	for k, v := range s.Headers {
		if _, ok := s.UserValues["headers."+k]; !ok {
			sp.secrets = append(sp.secrets, v)
		}
	}
	sp.secrets = slices.DeleteFunc(sp.secrets, func(v string) bool { return v == "" })
	slices.SortFunc(sp.secrets, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b))
	})
	s.Secrets = slices.Compact(sp.secrets)
}

// checkUserValues refuses a ${user:} where the transport does not use
// it: headers of a stdio server, env of a remote one.
func (sp *serverParse) checkUserValues() {
	for _, key := range slices.Sorted(maps.Keys(sp.s.UserValues)) {
		field, _, _ := strings.Cut(key, ".")
		stdio := sp.s.Transport == TransportStdio
		if (field == "env") == stdio {
			continue
		}
		what := "headers of a stdio server are never sent"
		if field == "env" {
			what = "env of an " + sp.s.Transport + " server reaches no process; use headers"
		}
		sp.p.errAt(sp.userOffs[key], sp.name, "${user:} in %s: %s", key, what)
	}
}

func hasKey(m map[string]int, k string) bool {
	_, ok := m[k]
	return ok
}

// readEnvFile merges a dotenv file into Env; explicit env keys win. A file
// that cannot be read makes the server unresolved rather than the whole
// config invalid; a syntax error in it is a config error located in it.
func (sp *serverParse) readEnvFile(file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			err = pe.Err
		}
		sp.unresolve(fmt.Sprintf("envFile %q: cannot read: %v", file, err))
		return
	}
	vars, errs := parseEnvFile(data)
	for _, e := range errs {
		sp.p.errs = append(sp.p.errs, &ConfigError{File: file, Line: e.line, Column: 1, Server: sp.name, Msg: e.msg})
	}
	if len(vars) == 0 {
		return
	}
	env := make(map[string]string, len(vars)+len(sp.s.Env))
	maps.Copy(env, vars)
	maps.Copy(env, sp.s.Env)
	sp.s.Env = env
}

// addMCPURL adds the server the MCP_URL environment variable asks for.
func (p *parser) addMCPURL() {
	u, ok := p.opts.LookupEnv("MCP_URL")
	if !ok || u == "" {
		return
	}
	for _, s := range p.cfg.Servers {
		if ToolName(s.Name) == ToolName(mcpURLServer) {
			p.cfg.Warnings = append(p.cfg.Warnings, fmt.Sprintf(
				"%s:%d:%d: server %q: MCP_URL ignored: the file already has this server", p.file, s.Line, s.Column, s.Name))
			return
		}
	}
	s := ServerConfig{
		Name:      mcpURLServer,
		Transport: TransportHTTP,
		URL:       u,
		Enabled:   true,
		Templates: map[string]string{"url": "${env:MCP_URL}"},
		Secrets:   []string{u},
	}
	if msg := checkURL(u); msg != "" {
		p.errs = append(p.errs, &ConfigError{File: "MCP_URL", Server: mcpURLServer, Msg: "invalid url in the MCP_URL environment variable: " + msg})
		return
	}
	p.cfg.Servers = append(p.cfg.Servers, s)
}

// normalTransport maps the accepted spellings to the Transport constants;
// anything else is returned as is for problems() to report.
func normalTransport(t string) string {
	switch strings.ToLower(t) {
	case "stdio":
		return TransportStdio
	case "http", "streamable_http", "streamable-http", "streamablehttp":
		return TransportHTTP
	case "sse":
		return TransportSSE
	}
	return t
}

// seconds reads a timeout: a JSON number of seconds, > 0, at most a day.
func seconds(n *jnode) (time.Duration, bool) {
	if n.kind != jNumber {
		return 0, false
	}
	f, err := strconv.ParseFloat(n.str, 64)
	if err != nil || f <= 0 || f > maxTimeout.Seconds() {
		return 0, false
	}
	return max(time.Duration(f*float64(time.Second)), time.Millisecond), true
}
