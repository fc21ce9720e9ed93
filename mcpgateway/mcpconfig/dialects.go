package mcpconfig

import (
	"strconv"
)

// Zed's settings.json ("context_servers") and opencode's config ("mcp")
// load like the other shapes. Each of their entries is rewritten into the
// keys of a "servers" entry, every value keeping its offset, and then read
// as any other server: errors point into the file as it was written.

// knownShapes names every shape Parse reads, for the error of a file that
// has none.
const knownShapes = `"servers" (VS Code, or the seeds' list), "mcpServers" (Claude Desktop, Claude Code, Cursor, Windsurf, Gemini CLI), ` +
	`"context_servers" (Zed), "mcp" (opencode), or a top-level array of servers`

// noServers records the error of a file with no servers in any shape
// Parse knows: a service started with nothing would only puzzle.
func (p *parser) noServers(root *jnode) {
	p.errAt(root.off, "", "no servers: want one of %s", knownShapes)
}

// dialectServers reads the servers of a Zed "context_servers" block or an
// opencode "mcp" block (m).
func (p *parser) dialectServers(m jmember) {
	if !p.is(m.val, jObject, "", m.key) {
		return
	}
	entries := m.val.members
	rewrite := zedServer
	if m.key == "mcp" {
		rewrite = opencodeServer
		// opencode's second config version nests them under "servers".
		if len(entries) == 1 && entries[0].key == "servers" && entries[0].val.kind == jObject && !hasMember(entries[0].val, "type") {
			entries = entries[0].val.members
		}
	}
	for _, s := range entries {
		if !p.is(s.val, jObject, s.key, "a server") {
			continue
		}
		if obj := rewrite(p, s.key, s.val); obj != nil {
			p.server(s.key, s.keyOff, obj, false)
		}
	}
}

// zedServer rewrites a Zed context server: {"command": {"path", "args",
// "env"}} (or "command" a string beside "args" and "env", as in
// mcpServers) for a local one, {"url", "headers"} for a remote one;
// "source" and an extension's "settings" are Zed's own. Nil when an error
// was recorded.
func zedServer(p *parser, name string, obj *jnode) *jnode {
	out := &jnode{kind: jObject, off: obj.off}
	for _, m := range obj.members {
		switch m.key {
		case "source", "settings":
		case "command":
			if m.val.kind != jObject {
				out.members = append(out.members, m)
				continue
			}
			for _, c := range m.val.members {
				switch c.key {
				case "path":
					out.members = append(out.members, jmember{key: "command", keyOff: c.keyOff, val: c.val})
				case "args", "env":
					if hasMember(obj, c.key) {
						p.errAt(c.keyOff, name, "%s given twice: in command and beside it", c.key)
						return nil
					}
					out.members = append(out.members, c)
				default:
					p.warnAt(c.keyOff, name, "unknown key %q in command ignored (want path, args or env)", c.key)
				}
			}
			if !hasMember(m.val, "path") {
				p.errAt(m.val.off, name, `command has no "path"`)
				return nil
			}
		default:
			out.members = append(out.members, m)
		}
	}
	return out
}

// opencodeServer rewrites an opencode server: "type" local (stdio) or
// remote (http, which falls back to SSE as opencode does), "command" an
// array (the program, then its arguments), "environment" its env,
// "timeout" milliseconds to connect and "oauth": false no oauth block. Nil
// when an error was recorded.
func opencodeServer(p *parser, name string, obj *jnode) *jnode {
	out := &jnode{kind: jObject, off: obj.off}
	for _, m := range obj.members {
		switch m.key {
		case "type":
			if v := m.val; v.kind == jString && (v.str == "local" || v.str == "remote") {
				t := TransportStdio
				if v.str == "remote" {
					t = TransportHTTP
				}
				m.val = &jnode{kind: jString, off: v.off, str: t}
			}
			out.members = append(out.members, m)
		case "command":
			if m.val.kind != jArray {
				out.members = append(out.members, m) // a string, as in the other shapes
				continue
			}
			if len(m.val.elems) == 0 {
				p.errAt(m.val.off, name, "command is an empty array: want the program, then its arguments")
				return nil
			}
			if hasMember(obj, "args") {
				p.errAt(m.keyOff, name, "give the arguments in the command array or in args, not both")
				return nil
			}
			prog := m.val.elems[0]
			out.members = append(out.members, jmember{key: "command", keyOff: m.keyOff, val: prog})
			if rest := m.val.elems[1:]; len(rest) > 0 {
				out.members = append(out.members, jmember{key: "args", keyOff: m.keyOff, val: &jnode{kind: jArray, off: rest[0].off, elems: rest}})
			}
		case "oauth":
			if m.val.kind == jBool && !m.val.boolean { // opencode's "no sign-in": ours without an oauth block
				continue
			}
			out.members = append(out.members, m)
		case "environment":
			if hasMember(obj, "env") {
				p.errAt(m.keyOff, name, "give one of environment and env, not both")
				return nil
			}
			out.members = append(out.members, jmember{key: "env", keyOff: m.keyOff, val: m.val})
		case "timeout":
			ms, err := strconv.ParseFloat(m.val.str, 64)
			if m.val.kind != jNumber || err != nil || ms <= 0 {
				p.errAt(m.val.off, name, "timeout must be a number of milliseconds > 0")
				return nil
			}
			secs := &jnode{kind: jNumber, off: m.val.off, str: strconv.FormatFloat(ms/1000, 'f', -1, 64)}
			out.members = append(out.members, jmember{key: "connect_timeout", keyOff: m.keyOff, val: secs})
		default:
			out.members = append(out.members, m)
		}
	}
	return out
}

// hasMember reports whether the object n has the key.
func hasMember(n *jnode, key string) bool {
	for _, m := range n.members {
		if m.key == key {
			return true
		}
	}
	return false
}
