package mcpregistry

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// builder is the state of one NewEntry.
type builder struct {
	o      EntryOptions
	server string
	bad    func(field, reason string) error
	e      Entry
	ids    map[string]bool // input ids and user secret names taken
}

// remote fills the entry from a remote transport at field.
func (b *builder) remote(field string, r Transport) error {
	b.e.From = "remote " + r.Type
	b.e.Transport = mcpconfig.TransportHTTP
	if r.Type == "sse" {
		b.e.Transport = mcpconfig.TransportSSE
	}
	if p := textProblem(r.URL); p != "" {
		return b.bad(field+".url", p)
	}
	u, err := b.fill(field+".url", r.URL, r.Variables, false)
	if err != nil {
		return err
	}
	if p := urlProblem(u); p != "" {
		return b.bad(field+".url", fmt.Sprintf("%s %s", quote(u), p))
	}
	b.e.URL = u
	for i, h := range r.Headers {
		f := fmt.Sprintf("%s.headers[%d]", field, i)
		if !headerName.MatchString(h.Name) {
			return b.bad(f+".name", quote(h.Name)+" is not a header name")
		}
		v, ok, err := b.resolve(f, h.Input, Value{Name: h.Name, Kind: "header"}, true)
		if err != nil {
			return err
		}
		if ok {
			b.e.Headers = append(b.e.Headers, KeyValue{h.Name, v})
		}
	}
	return nil
}

// pkg fills the entry from a package at field, run over stdio.
func (b *builder) pkg(field string, p Package) error {
	b.e.From = p.RegistryType
	b.e.Transport = mcpconfig.TransportStdio
	if p.Version != "" && checkVersion(p.Version) != nil {
		return b.bad(field+".version", quote(p.Version)+" is not a version")
	}
	var ref string
	switch p.RegistryType {
	case "npm":
		if !npmName.MatchString(p.Identifier) || len(p.Identifier) > 214 {
			return b.bad(field+".identifier", quote(p.Identifier)+" is not an npm package name")
		}
		ref = p.Identifier
		if p.Version != "" {
			ref += "@" + p.Version
		}
		b.e.Command, b.e.Args = "npx", []string{"-y"}
	case "pypi":
		if !pypiName.MatchString(p.Identifier) || len(p.Identifier) > 200 {
			return b.bad(field+".identifier", quote(p.Identifier)+" is not a PyPI project name")
		}
		ref = p.Identifier
		if p.Version != "" {
			ref += "==" + p.Version
		}
		b.e.Command = "uvx"
	case "oci":
		if !ociImage.MatchString(p.Identifier) || len(p.Identifier) > 255 {
			return b.bad(field+".identifier", quote(p.Identifier)+" is not an OCI image reference")
		}
		ref = p.Identifier
		last := ref[strings.LastIndexByte(ref, '/')+1:]
		if p.Version != "" && !strings.Contains(last, ":") && !strings.Contains(ref, "@") {
			ref += ":" + p.Version
		}
		b.e.Command, b.e.Args = "docker", []string{"run", "-i", "--rm"}
	}
	runtime, err := b.args(field+".runtimeArguments", p.RuntimeArguments)
	if err != nil {
		return err
	}
	for i, a := range runtime {
		if deniedFlag(p.RegistryType, a) {
			return b.bad(fmt.Sprintf("%s.runtimeArguments[%d]", field, i), fmt.Sprintf("%s is refused for %s: it would run a shell, another package or give the host away", quote(a), p.RegistryType))
		}
	}
	b.e.Args = append(b.e.Args, runtime...)
	for i, ev := range p.EnvironmentVariables {
		f := fmt.Sprintf("%s.environmentVariables[%d]", field, i)
		if !envVarName.MatchString(ev.Name) {
			return b.bad(f+".name", quote(ev.Name)+" is not an environment variable name")
		}
		v, ok, err := b.resolve(f, ev.Input, Value{Name: ev.Name, Kind: "environment variable"}, true)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		b.e.Env = append(b.e.Env, KeyValue{ev.Name, v})
		if p.RegistryType == "oci" {
			// docker passes a variable of its own environment into the
			// container when named without a value.
			b.e.Args = append(b.e.Args, "-e", ev.Name)
		}
	}
	b.e.Args = append(b.e.Args, ref)
	args, err := b.args(field+".packageArguments", p.PackageArguments)
	if err != nil {
		return err
	}
	b.e.Args = append(b.e.Args, args...)
	return nil
}

// args turns arguments into command-line words.
func (b *builder) args(field string, list []Argument) ([]string, error) {
	var out []string
	for i, a := range list {
		f := fmt.Sprintf("%s[%d]", field, i)
		switch a.Type {
		case "named":
			if !flagName.MatchString(a.Name) {
				return nil, b.bad(f+".name", quote(a.Name)+" is not a flag such as --port")
			}
			v, ok, err := b.resolve(f, a.Input, Value{Name: a.Name, Kind: "argument"}, false)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, a.Name, v)
			}
		case "positional":
			hint := a.ValueHint
			if hint != "" && !variableName.MatchString(hint) {
				return nil, b.bad(f+".valueHint", quote(hint)+" is not a name")
			}
			if hint == "" {
				hint = "argument " + strconv.Itoa(i+1)
			}
			v, ok, err := b.resolve(f, a.Input, Value{Name: hint, Kind: "argument"}, false)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, v)
			}
		default:
			return nil, b.bad(f+".type", quote(a.Type)+" is not positional or named")
		}
	}
	return out, nil
}

// resolve returns the text of one input at field, described by v: its
// fixed value with its {variables} filled in, a secret as ${input:ID} (or
// ${user:NAME} when userOK and asked for), a given value, its default, or
// an asked one. ok is false for an optional value left out.
func (b *builder) resolve(field string, in Input, v Value, userOK bool) (string, bool, error) {
	v.Description, v.Choices, v.Placeholder = cleanDescription(in.Description), in.Choices, termSafe(in.Placeholder)
	if in.Value != "" {
		if p := textProblem(in.Value); p != "" {
			return "", false, b.bad(field+".value", p)
		}
		s, err := b.fill(field+".value", in.Value, in.Variables, userOK)
		return s, err == nil, err
	}
	if in.IsSecret {
		if !in.IsRequired {
			b.e.Skipped = append(b.e.Skipped, v.Kind+" "+v.Name+" (optional secret)")
			return "", false, nil
		}
		return b.secret(v, userOK), true, nil
	}
	if given, ok := b.given(v.Name); ok {
		if len(in.Choices) > 0 && !slices.Contains(in.Choices, given) {
			return "", false, fmt.Errorf("%s %s: %s is not one of %s", v.Kind, v.Name, quote(given), termSafe(strings.Join(in.Choices, ", ")))
		}
		return given, true, nil
	}
	if in.Default != "" {
		if p := textProblem(in.Default); p != "" {
			return "", false, b.bad(field+".default", p)
		}
		return in.Default, true, nil
	}
	if !in.IsRequired {
		b.e.Skipped = append(b.e.Skipped, v.Kind+" "+v.Name)
		return "", false, nil
	}
	if b.o.Ask == nil {
		return "", false, &MissingValueError{Server: b.server, Value: v}
	}
	answer, err := b.o.Ask(v)
	if err != nil {
		return "", false, &MissingValueError{Server: b.server, Value: v, Err: err}
	}
	if len(in.Choices) > 0 && !slices.Contains(in.Choices, answer) {
		return "", false, fmt.Errorf("%s %s: %s is not one of %s", v.Kind, v.Name, quote(answer), termSafe(strings.Join(in.Choices, ", ")))
	}
	if hasControl(answer) {
		return "", false, fmt.Errorf("%s %s: the value holds a control character", v.Kind, v.Name)
	}
	return answer, true, nil
}

// given looks name up in Values, a flag also without its dashes.
func (b *builder) given(name string) (string, bool) {
	if v, ok := b.o.Values[name]; ok {
		return v, true
	}
	if bare := strings.TrimLeft(name, "-"); bare != name {
		v, ok := b.o.Values[bare]
		return v, ok
	}
	return "", false
}

// fill replaces each {name} of tmpl that vars defines with that variable's
// text (resolved as an input of kind "variable", a secret as ${user:} only
// when userOK); a {name} vars does not define, or an optional one left out,
// stays as written, as the schema says.
func (b *builder) fill(field, tmpl string, vars map[string]Input, userOK bool) (string, error) {
	if len(vars) == 0 {
		return tmpl, nil
	}
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		if !variableName.MatchString(k) {
			return "", b.bad(field+".variables", quote(k)+" is not a variable name")
		}
	}
	var out strings.Builder
	rest := tmpl
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			out.WriteString(rest)
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			out.WriteString(rest)
			break
		}
		name := rest[i+1 : i+j]
		in, ok := vars[name]
		out.WriteString(rest[:i])
		rest = rest[i+j+1:]
		if !ok {
			out.WriteString("{" + name + "}")
			continue
		}
		s, ok, err := b.resolve(field+".variables."+name, in, Value{Name: name, Kind: "variable"}, userOK)
		if err != nil {
			return "", err
		}
		if !ok {
			out.WriteString("{" + name + "}")
			continue
		}
		out.WriteString(s)
	}
	return out.String(), nil
}

// secret returns the reference a secret is written as, declaring its
// input or naming its user secret.
func (b *builder) secret(v Value, userOK bool) string {
	if userOK && b.o.PerUserSecrets {
		name := b.unique(secretRef(b.e.Name + "." + v.Name))
		b.e.UserSecrets = append(b.e.UserSecrets, name)
		return "${user:" + name + "}"
	}
	id := b.unique(inputID(b.e.Name + "_" + v.Name))
	desc := v.Description
	if desc == "" {
		desc = fmt.Sprintf("%s %s of %s", v.Kind, v.Name, b.e.Name)
	}
	b.e.Inputs = append(b.e.Inputs, mcpconfig.Input{Type: "promptString", ID: id, Description: desc, Password: true})
	return "${input:" + id + "}"
}

// unique returns name, or name with a number when taken.
func (b *builder) unique(name string) string {
	out := name
	for i := 2; b.ids[out]; i++ {
		out = name + "_" + strconv.Itoa(i)
	}
	b.ids[out] = true
	return out
}

// inputID turns s into an input id: lower case, [a-z0-9_].
func inputID(s string) string {
	return strings.Trim(strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '_'
	}, s), "_")
}

// secretRef turns s into the name of a user's secret: [A-Za-z0-9_.-], at
// most 128.
func secretRef(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '_' || r == '.' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, s)
	if len(s) > 120 {
		s = s[:120]
	}
	return s
}
