package mcpconfig

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Failover policies, "policy" in mcp.json (DESIGN.md, "Copies and
// failover").
const (
	// PolicyPriority sends every call to the first healthy copy in order,
	// the server's own keys being the first. It is the default.
	PolicyPriority = "priority"
	// PolicyRoundRobin spreads calls over the healthy copies, one session
	// per copy.
	PolicyRoundRobin = "round_robin"
)

// MaxCopies bounds a server's "copies": more than a handful of equivalent
// copies helps no one, and each costs a session and a process.
const MaxCopies = 16

// copyKeys are the keys a copy takes: those that say how to reach a
// server. Everything else is the server's.
var copyKeys = []string{"type", "transport", "command", "server_script_path", "args", "env", "envFile", "cwd",
	"url", "serverUrl", "httpUrl", "headers", "oauth"}

// CopyLabel names copy i of a server for people: "copy 1" is the server's
// own keys, "copy 2" its copies[0], and so on.
func CopyLabel(i int) string { return fmt.Sprintf("copy %d", i+1) }

// AllCopies returns the copies of s in order: s itself without its
// Copies first, then each of its Copies. A server without copies has one.
func (s ServerConfig) AllCopies() []ServerConfig {
	first := s
	first.Copies, first.Policy = nil, ""
	return append([]ServerConfig{first}, s.Copies...)
}

// Where returns the address of the server for people: its URL, or its
// command line, as written in mcp.json and masked.
func (s ServerConfig) Where() string {
	d := s.Display()
	if s.Transport != TransportStdio {
		return d.URL
	}
	return strings.Join(append([]string{d.Command}, d.Args...), " ")
}

// policy reads "policy".
func (sp *serverParse) policy(v *jnode) {
	if !sp.p.is(v, jString, sp.name, "policy") {
		return
	}
	switch v.str {
	case PolicyPriority, PolicyRoundRobin:
		sp.s.Policy = v.str
	default:
		sp.p.errAt(v.off, sp.name, "policy must be %q or %q, got %q", PolicyPriority, PolicyRoundRobin, v.str)
	}
}

// copies reads "copies" once the server itself is read: each copy is the
// server with its transport keys replaced by the copy's.
func (sp *serverParse) copies() {
	p, v := sp.p, sp.copyList
	if v == nil {
		if sp.s.Policy != "" {
			p.warnAt(sp.fieldOff["policy"], sp.name, "policy ignored: the server has no copies")
		}
		return
	}
	if v.kind != jArray {
		p.errAt(v.off, sp.name, "copies must be an array of objects, got %s", v.kind)
		return
	}
	if len(v.elems) > MaxCopies {
		p.errAt(v.off, sp.name, "copies has %d entries; at most %d are allowed", len(v.elems), MaxCopies)
		return
	}
	secrets := slices.Clone(sp.s.Secrets)
	for i, e := range v.elems {
		nerr := len(p.errs)
		c, ok := sp.copyAt(e)
		for _, err := range p.errs[nerr:] {
			if ce, ok := err.(*ConfigError); ok && ce.Server != "" {
				ce.Msg = fmt.Sprintf("copies[%d]: %s", i, ce.Msg)
			}
		}
		if ok {
			sp.s.Copies = append(sp.s.Copies, c)
			secrets = append(secrets, c.Secrets...)
		}
	}
	// Each copy and the server mask every copy's secrets: a log record
	// of the server may name any of them.
	slices.SortFunc(secrets, func(a, b string) int { return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b)) })
	secrets = slices.Compact(secrets)
	sp.s.Secrets = secrets
	for i := range sp.s.Copies {
		sp.s.Copies[i].Secrets = secrets
	}
}

// copyAt reads one copy object; ok is false when it had errors.
func (sp *serverParse) copyAt(e *jnode) (ServerConfig, bool) {
	p := sp.p
	if !p.is(e, jObject, sp.name, "a copy") {
		return ServerConfig{}, false
	}
	line, col := p.lines.position(e.off)
	cp := &serverParse{p: p, name: sp.name, fieldOff: map[string]int{"": e.off}, local: sp.local, localVals: sp.localVals, userOffs: map[string]int{}}
	cp.s = sp.s
	cp.s.Line, cp.s.Column = line, col
	cp.s.Command, cp.s.Args, cp.s.Env, cp.s.Cwd, cp.s.URL, cp.s.Headers, cp.s.OAuth = "", nil, nil, "", "", nil, nil
	cp.s.UserValues, cp.s.Templates, cp.s.Secrets, cp.s.Unresolved = nil, nil, nil, ""
	cp.s.Copies, cp.s.Policy = nil, ""
	nerr := len(p.errs)
	for _, m := range e.members {
		if !slices.Contains(copyKeys, m.key) {
			p.errAt(m.keyOff, sp.name, "key %q is the server's, not a copy's: a copy takes only %s", m.key, strings.Join(copyKeys, ", "))
			continue
		}
		cp.member(m, false)
	}
	if len(p.errs) > nerr {
		return ServerConfig{}, false
	}
	cp.finish()
	if len(p.errs) > nerr {
		return ServerConfig{}, false
	}
	for _, pr := range cp.s.problems() {
		off, ok := cp.fieldOff[pr.field]
		if !ok {
			off = cp.fieldOff[""]
		}
		p.errAt(off, sp.name, "%s", pr.msg)
	}
	return cp.s, len(p.errs) == nerr
}
