package mcpgateway

import (
	"fmt"
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

// expand substitutes ${env:VAR}, ${input:ID} and ${workspaceFolder} in a
// string node. A variable without a value makes the server unresolved; an
// unknown form is a config error.
func (sp *serverParse) expand(n *jnode) text {
	t := text{val: n.str, written: n.str, off: n.off}
	rest := n.str
	if !strings.Contains(rest, "${") {
		return t
	}
	var b strings.Builder
	for {
		i := strings.Index(rest, "${")
		if i < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i])
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			// The value is not quoted: it may hold a literal secret.
			sp.p.errAt(n.off, sp.name, `unterminated "${" in the value (no closing "}")`)
			return t
		}
		expr := rest[i+2 : i+j]
		rest = rest[i+j+1:]
		v, ok := sp.lookup(expr, n)
		if !ok {
			return t
		}
		b.WriteString(v)
	}
	t.val, t.templated = b.String(), true
	return t
}

// lookup returns the value of one ${expr}; ok is false after a config
// error.
func (sp *serverParse) lookup(expr string, n *jnode) (string, bool) {
	kind, name, _ := strings.Cut(expr, ":")
	switch {
	case expr == "workspaceFolder":
		return sp.p.opts.BaseDir, true
	case (kind == "env" || kind == "input") && name == "":
		sp.p.errAt(n.off, sp.name, "empty name in \"${%s}\"", expr)
		return "", false
	case kind == "env":
		v, ok := sp.p.opts.LookupEnv(name)
		if !ok {
			sp.unresolve(fmt.Sprintf("environment variable %s is not set (used as ${env:%s})", name, name))
			return "", true
		}
		sp.secrets = append(sp.secrets, v)
		return v, true
	case kind == "input":
		iv := sp.input(name, n)
		if !iv.ok {
			sp.unresolve(iv.reason)
			return "", true
		}
		sp.secrets = append(sp.secrets, iv.val)
		return iv.val, true
	}
	sp.p.errAt(n.off, sp.name, "unknown substitution \"${%s}\" (want ${env:NAME}, ${input:ID} or ${workspaceFolder})", expr)
	return "", false
}

// input finds the value of an input: ELYSIA_INPUT_<ID>, else the prompter
// (enabled servers only), else the input's default. A prompter error falls
// through to the default, so that a reload, whose prompter only knows what
// was typed at start-up, resolves an input exactly as start-up did. Each
// input is looked up once per Parse, so the operator is prompted at most
// once for it.
func (sp *serverParse) input(id string, n *jnode) inputValue {
	p := sp.p
	in, local := sp.local[id]
	cache := p.inputVals
	if local {
		cache = sp.localVals
	} else if g, ok := p.inputs[id]; ok {
		in = g
	} else {
		p.warnAt(n.off, sp.name, "input %q is not declared in \"inputs\"", id)
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
