package mcpconfig

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Input is one entry of "inputs": a value the operator supplies at start-up
// rather than writing it into mcp.json, referenced as ${input:<ID>}.
type Input struct {
	// Type is "promptString" or "pickString" (VS Code's names).
	Type string `json:"type"`
	// ID is what ${input:<ID>} names.
	ID string `json:"id"`
	// Description is shown when prompting.
	Description string `json:"description,omitempty"`
	// Password asks a prompter not to echo the value.
	Password bool `json:"password,omitempty"`
	// Default is used when there is no environment variable and no
	// answer from a prompter (none set, or it returned an error); a
	// prompter may offer it.
	Default string `json:"default,omitempty"`
	// Server is the server whose own "inputs" list declares the input, ""
	// for a top-level input. Two servers may each declare an input with the
	// same ID, so a prompter that remembers answers keys them by Server and
	// ID.
	Server string `json:"-"`
}

// InputEnvVar returns the environment variable that gives the input id its
// value: ELYSIA_INPUT_ plus the id in upper case with every character
// outside [A-Z0-9] turned into "_" ("api-token" → ELYSIA_INPUT_API_TOKEN).
func InputEnvVar(id string) string {
	var b strings.Builder
	b.WriteString("ELYSIA_INPUT_")
	for _, r := range strings.ToUpper(id) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// inputValue is the outcome of looking an input up: a value, or why there
// is none.
type inputValue struct {
	val    string
	ok     bool
	reason string
}

// inputList reads an "inputs" array, in file order; server is "" for the
// top level.
func (p *parser) inputList(v *jnode, server string) []Input {
	if !p.is(v, jArray, server, "inputs") {
		return nil
	}
	var out []Input
	declared := make(map[string]bool)
	for _, e := range v.elems {
		if !p.is(e, jObject, server, "an input") {
			continue
		}
		in := Input{Server: server}
		ok := true
		for _, m := range e.members {
			var dst *string
			switch m.key {
			case "type":
				dst = &in.Type
			case "id":
				dst = &in.ID
			case "description":
				dst = &in.Description
			case "default":
				dst = &in.Default
			case "password":
				if ok = p.is(m.val, jBool, server, "input password") && ok; ok {
					in.Password = m.val.boolean
				}
			case "options": // pickString choices: a prompter's business
			default:
				p.warnAt(m.keyOff, server, "unknown key %q in input ignored", m.key)
			}
			if dst != nil {
				if ok = p.is(m.val, jString, server, "input "+m.key) && ok; ok {
					*dst = m.val.str
				}
			}
		}
		switch {
		case !ok:
		case in.ID == "":
			p.errAt(e.off, server, `input has no "id"`)
		case in.Type != "promptString" && in.Type != "pickString":
			p.errAt(e.off, server, "input %q: unknown type %q (want promptString or pickString)", in.ID, in.Type)
		case declared[in.ID]:
			p.errAt(e.off, server, "input %q declared twice", in.ID)
		default:
			declared[in.ID] = true
			out = append(out, in)
		}
	}
	return out
}

// expand substitutes every form mcp.json takes in a string node: ours and
// VS Code's ${env:VAR} and ${input:ID}; Claude Code's ${VAR} and
// ${VAR:-default}; VS Code's and Cursor's ${workspaceFolder},
// ${workspaceFolderBasename}, ${userHome}, ${pathSeparator} and ${/}; and,
// in the one value sp.userField names (a header, or env of a stdio server),
// ${user:NAME}, which stays in place for each user's session to fill in
// (t.user). A variable without a value makes the server unresolved; an
// unknown form is a config error located at its "${".
func (sp *serverParse) expand(n *jnode) text {
	t := text{val: n.str, written: n.str, off: n.off}
	rest := n.str
	if !strings.Contains(rest, "${") {
		return t
	}
	// b is the value, with ${user:NAME} left as written; lit is the
	// literal text since the last ${user:}, for t.user.
	var b, lit strings.Builder
	var user UserValue
	write := func(s string) {
		b.WriteString(s)
		lit.WriteString(s)
	}
	pos := 0 // of rest in n.str
	for {
		i := strings.Index(rest, "${")
		if i < 0 {
			write(rest)
			break
		}
		write(rest[:i])
		at := sp.p.lines.stringOffset(n.off, pos+i)
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			// The value is not quoted: it may hold a literal secret.
			sp.p.errAt(at, sp.name, `unterminated "${" in the value (no closing "}")`)
			return t
		}
		expr := rest[i+2 : i+j]
		rest, pos = rest[i+j+1:], pos+i+j+1
		if name, ok := strings.CutPrefix(expr, "user:"); ok {
			if !sp.userRef(name, at) {
				return t
			}
			user = append(user, UserPart{Text: lit.String()}, UserPart{Secret: name})
			lit.Reset()
			b.WriteString("${user:" + name + "}")
			continue
		}
		v, ok := sp.lookup(expr, at)
		if !ok {
			return t
		}
		write(v)
	}
	t.val, t.templated = b.String(), true
	if user != nil {
		user = append(user, UserPart{Text: lit.String()})
		t.user = slices.DeleteFunc(user, func(p UserPart) bool { return p == UserPart{} })
	}
	return t
}

// lookup returns the value of one ${expr} whose "${" is at off; ok is
// false after a config error.
func (sp *serverParse) lookup(expr string, off int) (string, bool) {
	p := sp.p
	kind, name, colon := strings.Cut(expr, ":")
	switch {
	case expr == "workspaceFolder":
		return p.opts.BaseDir, true
	case expr == "workspaceFolderBasename":
		return filepath.Base(p.opts.BaseDir), true
	case expr == "pathSeparator" || expr == "/":
		return string(filepath.Separator), true
	case expr == "userHome":
		for _, k := range []string{"HOME", "USERPROFILE"} {
			if v, ok := p.opts.LookupEnv(k); ok && v != "" {
				return v, true
			}
		}
		sp.unresolve("the home folder is unknown: HOME is not set (used as ${userHome})")
		return "", true
	case editorOnly[expr]:
		p.errAt(off, sp.name, "\"${%s}\" is an editor variable with no meaning outside the editor", expr)
		return "", false
	case colon && strings.HasPrefix(name, "-") && envName.MatchString(kind):
		// Claude Code's ${VAR:-default}: the default when VAR is not set.
		v, ok := p.opts.LookupEnv(kind)
		if !ok {
			v = name[1:]
		}
		sp.secrets = append(sp.secrets, v)
		return v, true
	case !colon && envName.MatchString(expr):
		// Claude Code's ${VAR}, as ${env:VAR}.
		return sp.env(expr, "${"+expr+"}"), true
	case (kind == "env" || kind == "input") && name == "":
		p.errAt(off, sp.name, "empty name in \"${%s}\"", expr)
		return "", false
	case kind == "env":
		return sp.env(name, "${env:"+name+"}"), true
	case kind == "input":
		iv := sp.input(name, off)
		if !iv.ok {
			sp.unresolve(iv.reason)
			return "", true
		}
		sp.secrets = append(sp.secrets, iv.val)
		return iv.val, true
	}
	p.errAt(off, sp.name, "unknown substitution \"${%s}\" (want ${NAME}, ${NAME:-default}, ${env:NAME}, ${input:ID}, "+
		"${user:NAME} in headers and env, ${workspaceFolder}, ${workspaceFolderBasename}, ${userHome} or ${pathSeparator})", expr)
	return "", false
}

// env returns the value of the environment variable name, a secret, or
// makes the server unresolved when it is not set (as written: how the
// file used it).
func (sp *serverParse) env(name, written string) string {
	v, ok := sp.p.opts.LookupEnv(name)
	if !ok {
		sp.unresolve(fmt.Sprintf("environment variable %s is not set (used as %s)", name, written))
		return ""
	}
	sp.secrets = append(sp.secrets, v)
	return v
}

// userRef checks a ${user:NAME} whose "${" is at off: a valid name, in a
// value that takes the asking user's secrets. It reports whether it is
// fine.
func (sp *serverParse) userRef(name string, off int) bool {
	switch {
	case name == "":
		sp.p.errAt(off, sp.name, `empty name in "${user:}"`)
	case !secretName.MatchString(name):
		sp.p.errAt(off, sp.name, "invalid secret name %q in \"${user:%s}\" (want letters, digits, '_', '.' or '-', at most 128)", name, name)
	case sp.userField == "":
		sp.p.errAt(off, sp.name, "\"${user:%s}\" takes the asking user's own secret: only in headers, and in env of a stdio server", name)
	default:
		if _, ok := sp.userOffs[sp.userField]; !ok {
			sp.userOffs[sp.userField] = off
		}
		return true
	}
	return false
}

// envName matches an environment variable name as ${VAR} takes it.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// secretName matches the NAME of ${user:NAME}, which is also a path
// segment of PUT /users/:user/secrets/:name.
var secretName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// editorOnly are VS Code's variables about the open editor, which a
// pasted file may hold and which mean nothing to a service. They are
// refused by name rather than read as environment variables.
var editorOnly = map[string]bool{
	"file": true, "fileWorkspaceFolder": true, "relativeFile": true, "relativeFileDirname": true,
	"fileBasename": true, "fileBasenameNoExtension": true, "fileExtname": true, "fileDirname": true,
	"fileDirnameBasename": true, "cwd": true, "lineNumber": true, "columnNumber": true,
	"selectedText": true, "execPath": true, "defaultBuildTask": true,
}

// input finds the value of an input: ELYSIA_INPUT_<ID>, else the prompter
// (enabled servers only), else the input's default. A prompter error falls
// through to the default, so that a reload, whose prompter only knows what
// was typed at start-up, resolves an input exactly as start-up did. Each
// input is looked up once per Parse, so the operator is prompted at most
// once for it.
func (sp *serverParse) input(id string, off int) inputValue {
	p := sp.p
	in, local := sp.local[id]
	cache := p.inputVals
	if local {
		cache = sp.localVals
	} else if g, ok := p.inputs[id]; ok {
		in = g
	} else {
		p.warnAt(off, sp.name, "input %q is not declared in \"inputs\"", id)
		in = Input{Type: "promptString", ID: id}
	}
	if iv, ok := cache[id]; ok {
		return iv
	}
	env := InputEnvVar(id)
	iv := inputValue{reason: fmt.Sprintf("input %q has no value: set %s", id, env)}
	if v, ok := p.opts.LookupEnv(env); ok {
		iv = inputValue{val: v, ok: true}
		cache[id] = iv
		return iv
	}
	if p.opts.Prompt != nil && sp.s.Enabled {
		v, err := p.opts.Prompt(in)
		if err == nil {
			iv = inputValue{val: v, ok: true}
			cache[id] = iv
			return iv
		}
		iv.reason = fmt.Sprintf("input %q has no value: prompt: %v (or set %s)", id, err, env)
	}
	if in.Default != "" {
		iv = inputValue{val: in.Default, ok: true}
	}
	if !sp.s.Enabled {
		return iv // not kept: a later enabled server may still prompt
	}
	cache[id] = iv
	return iv
}
