package mcpregistry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// EntryOptions configures NewEntry. A nil *EntryOptions means the defaults
// below; the struct is copied on entry.
type EntryOptions struct {
	// Name is the entry's name in mcp.json. "" means the part of the
	// server's name after the slash ("io.github.user/weather" → weather).
	Name string
	// PerUserSecrets writes a secret header (of a remote) or environment
	// variable (of a package) as ${user:NAME}, each user's own secret,
	// instead of a ${input:ID} password input the operator gives once.
	// Secret arguments and URL variables are inputs either way. False
	// means inputs.
	PerUserSecrets bool
	// Values gives values by name: an environment variable's or header's
	// name, an argument's valueHint or flag ("--port" or "port"), or a
	// {variable}'s name. A given value is written as it is (it may use
	// ${env:...} or ${input:...}); it wins over a default. Nil means none.
	Values map[string]string
	// Ask is called for a required value without a default that Values
	// does not give, never for a secret. Nil means such a value is a
	// *MissingValueError.
	Ask func(v Value) (string, error)
}

// Value is a value a server needs, as Ask is asked for it.
type Value struct {
	// Name is how Values names it: "DB_USERNAME", "--host", "tenant".
	Name string
	// Kind is "environment variable", "header", "argument" or "variable".
	Kind        string
	Description string
	// Choices, when not empty, are the values allowed.
	Choices []string
	// Placeholder is an example, or "".
	Placeholder string
}

// Entry is an mcp.json server entry made from a server.json.
type Entry struct {
	// Name is the entry's name (its key in mcp.json).
	Name string
	// From says what the entry runs, for people: "remote streamable-http",
	// "remote sse", "npm", "pypi" or "oci".
	From string
	// Transport is mcpconfig.TransportHTTP, TransportSSE or TransportStdio.
	Transport string
	// Command and Args start a package (stdio); URL and Headers reach a
	// remote. Env and Headers keep the server.json's order.
	Command string
	Args    []string
	Env     []KeyValue
	URL     string
	Headers []KeyValue
	// Description is the server's, cleaned of control characters.
	Description string
	// Inputs are the entry's own ${input:ID} password inputs, one per
	// secret.
	Inputs []mcpconfig.Input
	// UserSecrets are the ${user:NAME} names each user sets.
	UserSecrets []string
	// Skipped names the optional values left out (no value, no default).
	Skipped []string
	// Registry is where the entry came from.
	Registry mcpconfig.RegistryRef
}

// KeyValue is one environment variable or header.
type KeyValue struct {
	Key, Value string
}

// OwnedKeys returns the keys of an mcp.json entry that NewEntry writes (and
// that an update from the registry replaces or removes); every other key
// of an entry is the operator's. Description is written when an entry is
// added but left to the operator after that.
func OwnedKeys() []string {
	return []string{"type", "command", "args", "env", "url", "headers", "inputs", "registry"}
}

// JSON returns the entry as a JSON object in a fixed order: type, then
// command, args and env or url and headers, description, inputs, registry.
func (e *Entry) JSON() []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	put := func(key string, v any) {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		k, _ := json.Marshal(key)
		val, err := json.Marshal(v)
		if err != nil { // strings, slices and maps of strings always marshal
			panic(err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(val)
	}
	ordered := func(kvs []KeyValue) json.RawMessage {
		var m bytes.Buffer
		m.WriteByte('{')
		for i, kv := range kvs {
			if i > 0 {
				m.WriteByte(',')
			}
			k, _ := json.Marshal(kv.Key)
			v, _ := json.Marshal(kv.Value)
			m.Write(k)
			m.WriteByte(':')
			m.Write(v)
		}
		m.WriteByte('}')
		return m.Bytes()
	}
	put("type", e.Transport)
	if e.Transport == mcpconfig.TransportStdio {
		put("command", e.Command)
		if len(e.Args) > 0 {
			put("args", e.Args)
		}
		if len(e.Env) > 0 {
			put("env", ordered(e.Env))
		}
	} else {
		put("url", e.URL)
		if len(e.Headers) > 0 {
			put("headers", ordered(e.Headers))
		}
	}
	if e.Description != "" {
		put("description", e.Description)
	}
	if len(e.Inputs) > 0 {
		put("inputs", e.Inputs)
	}
	put("registry", e.Registry)
	b.WriteByte('}')
	return b.Bytes()
}

// NewEntry turns s into an mcp.json entry: its first Streamable HTTP
// remote, else its first SSE remote, else its first package over stdio in
// the order npm, PyPI, OCI. A server.json with nothing of those, or with a
// field that cannot be written safely, is an *InvalidServerError; a
// required value that is neither given nor asked for is a
// *MissingValueError.
func NewEntry(s *Server, opts *EntryOptions) (*Entry, error) {
	var o EntryOptions
	if opts != nil {
		o = *opts
	}
	bad := func(field, reason string) error {
		return &InvalidServerError{Server: s.Name, Version: s.Version, Field: field, Reason: reason}
	}
	if err := checkServerName(s.Name); err != nil {
		return nil, bad("name", "not a server name")
	}
	if checkVersion(s.Version) != nil {
		return nil, bad("version", "not a version")
	}
	name := o.Name
	if name == "" {
		name = EntryName(s.Name)
	}
	if !entryName.MatchString(name) {
		return nil, fmt.Errorf("entry name %s: want letters, digits, '.', '_' or '-', at most 64, starting with a letter or digit", quote(name))
	}
	b := &builder{o: o, server: s.Name, bad: bad, ids: map[string]bool{},
		e: Entry{Name: name, Description: cleanDescription(s.Description), Registry: mcpconfig.RegistryRef{Name: s.Name, Version: s.Version}}}
	for _, want := range []string{"streamable-http", "sse"} {
		for i, r := range s.Remotes {
			if r.Type == want {
				if err := b.remote(fmt.Sprintf("remotes[%d]", i), r); err != nil {
					return nil, err
				}
				return &b.e, nil
			}
		}
	}
	var found []string
	for _, want := range []string{"npm", "pypi", "oci"} {
		for i, p := range s.Packages {
			if p.RegistryType != want {
				continue
			}
			if t := p.Transport.Type; t != "" && t != "stdio" {
				found = append(found, fmt.Sprintf("%s package over %s", want, termSafe(t)))
				continue
			}
			if err := b.pkg(fmt.Sprintf("packages[%d]", i), p); err != nil {
				return nil, err
			}
			return &b.e, nil
		}
	}
	for _, p := range s.Packages {
		if !slices.Contains([]string{"npm", "pypi", "oci"}, p.RegistryType) {
			found = append(found, termSafe(p.RegistryType)+" package")
		}
	}
	for _, r := range s.Remotes {
		if r.Type != "streamable-http" && r.Type != "sse" {
			found = append(found, "remote over "+termSafe(r.Type))
		}
	}
	reason := "no remote and no npm, PyPI or OCI package that runs over stdio"
	if len(found) > 0 {
		reason += " (it has: " + strings.Join(found, ", ") + ")"
	}
	return nil, bad("remotes, packages", reason)
}

// EntryName returns the name an entry of the server called server gets by
// default: the part of its name after the slash.
func EntryName(server string) string {
	_, name, ok := strings.Cut(server, "/")
	if !ok {
		return server
	}
	return name
}

// cleanDescription drops control and invisible characters and bounds the
// length: the description is shown to people and to the model.
func cleanDescription(d string) string {
	d = strings.Map(func(r rune) rune {
		if badRune(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(d, ""))
	d = strings.Join(strings.Fields(d), " ")
	if r := []rune(d); len(r) > 200 {
		d = string(r[:200]) + "…"
	}
	return d
}

// MissingValues returns every required value without a default that s
// needs and opts.Values does not give, in the order NewEntry would ask for
// them (opts.Ask is not called): what a form must ask before NewEntry can
// make the entry. None means NewEntry needs nothing more. An error is
// NewEntry's, other than a *MissingValueError.
func MissingValues(s *Server, opts *EntryOptions) ([]Value, error) {
	var o EntryOptions
	if opts != nil {
		o = *opts
	}
	var missing []Value
	o.Ask = func(v Value) (string, error) {
		missing = append(missing, v)
		if len(v.Choices) > 0 {
			return v.Choices[0], nil // a stand-in the choices accept
		}
		return "x", nil
	}
	if _, err := NewEntry(s, &o); err != nil {
		return nil, err
	}
	return missing, nil
}
