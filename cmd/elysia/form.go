package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/elysia-go/elysia/tools"
)

// fieldTries bounds how often one field of a form is asked again after an
// answer that does not fit it.
const fieldTries = 3

// formHint is printed before a form's first field.
const formHint = "  (Enter keeps the [default] or leaves the field out; * = required; !decline declines the whole form)\n"

// form asks each property of q's schema on one line, in the schema's
// order, and checks each answer at once against its property (type,
// choices, bounds): a bad answer asks that field again. An empty line
// keeps the default, or leaves an optional field out; "!decline"
// declines. ok is false when the user declined; reason says why the
// asker gave up. The error is ctx's, when it ends first.
func (a *terminalAsker) form(ctx context.Context, q tools.ElicitationPayload) (content map[string]any, ok bool, reason string, err error) {
	schema := q.RequestedSchema
	props, _ := schema["properties"].(map[string]any)
	required := map[string]bool{}
	reqList, _ := schema["required"].([]any)
	for _, r := range reqList {
		if name, ok := r.(string); ok {
			required[name] = true
		}
	}
	_, _ = fmt.Fprint(a.out, formHint)
	content = map[string]any{}
	for _, name := range fieldOrder(schema, q.FieldOrder) {
		p, _ := props[name].(map[string]any)
		f := newField(name, p, required[name])
		_, _ = fmt.Fprint(a.out, termText(f.prompt()))
		for try := 1; ; try++ {
			line, err := a.readLine(ctx)
			switch {
			case err != nil:
				return nil, false, "", err
			case line == "!decline":
				return nil, false, "", nil
			}
			v, set, err := f.read(line)
			if err == nil {
				if set {
					content[name] = v
				}
				break
			}
			if try == fieldTries {
				return nil, false, fmt.Sprintf("no valid answer for %s in %d tries", name, fieldTries), nil
			}
			_, _ = fmt.Fprintf(a.out, "  %s; try again, or !decline: ", termLine(err.Error()))
		}
	}
	return content, true, "", nil
}

// fieldOrder returns the properties of schema in the order to ask them:
// the server's order when the gateway kept it (order), else the required
// fields in the order "required" names them, then the rest by name.
func fieldOrder(schema map[string]any, order []string) []string {
	props, _ := schema["properties"].(map[string]any)
	out := make([]string, 0, len(props))
	seen := map[string]bool{}
	add := func(name string) {
		if _, ok := props[name]; ok && !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	for _, name := range order {
		add(name)
	}
	if len(order) == 0 {
		reqList, _ := schema["required"].([]any)
		for _, r := range reqList {
			name, _ := r.(string)
			add(name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		add(name)
	}
	return out
}

// choice is one option of a single or multiple choice.
type choice struct {
	value any
	title string // "" when the option has none
}

// field is one property of a form, as the terminal asks it.
type field struct {
	name     string
	p        map[string]any
	required bool
	multi    bool     // a multiple choice (an array)
	choices  []choice // nil when the field is not a choice
	check    *tools.Schema
}

func newField(name string, p map[string]any, required bool) field {
	f := field{name: name, p: p, required: required}
	f.multi = p["type"] == "array"
	src := p
	if f.multi {
		src, _ = p["items"].(map[string]any)
	}
	f.choices = choices(src)
	// Each answer is checked against its property alone; the whole form is
	// checked again when it is sent.
	raw, err := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{name: p}})
	if err == nil {
		if s, err := tools.CompileSchema(raw); err == nil {
			f.check = s
		}
	}
	return f
}

// choices reads an enum (with legacy enumNames) or a oneOf/anyOf of consts.
func choices(p map[string]any) []choice {
	var out []choice
	if enum, ok := p["enum"].([]any); ok {
		names, _ := p["enumNames"].([]any)
		for i, v := range enum {
			c := choice{value: v}
			if i < len(names) {
				c.title, _ = names[i].(string)
			}
			out = append(out, c)
		}
		return out
	}
	for _, key := range []string{"oneOf", "anyOf"} {
		opts, _ := p[key].([]any)
		for _, o := range opts {
			m, _ := o.(map[string]any)
			if v, ok := m["const"]; ok {
				t, _ := m["title"].(string)
				out = append(out, choice{value: v, title: t})
			}
		}
	}
	return out
}

// prompt is the field's question: its title (or name), * when required,
// what kind of answer it takes, its default, its description and its
// choices, numbered.
func (f field) prompt() string {
	label := f.name
	if t, _ := f.p["title"].(string); t != "" {
		label = t
	}
	if f.required {
		label += "*"
	}
	var b strings.Builder
	b.WriteString("  " + label)
	if kind := f.kind(); kind != "" {
		b.WriteString(" (" + kind + ")")
	}
	if d, ok := f.p["default"]; ok {
		fmt.Fprintf(&b, " [%s]", f.show(d))
	}
	if desc, _ := f.p["description"].(string); desc != "" {
		b.WriteString(" — " + desc)
	}
	for i, c := range f.choices {
		fmt.Fprintf(&b, "\n    %d) %s", i+1, c.label())
	}
	if len(f.choices) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString(": ")
	return b.String()
}

func (c choice) label() string {
	v := fmt.Sprint(c.value)
	if c.title == "" || c.title == v {
		return v
	}
	return c.title + " (" + v + ")"
}

// kind says what an answer looks like.
func (f field) kind() string {
	switch {
	case f.multi:
		return "choose one or more: numbers or names, comma-separated"
	case len(f.choices) > 0:
		return "choose one: number or name"
	}
	bounds := ""
	if lo, ok := f.p["minimum"]; ok {
		bounds = fmt.Sprintf(" %v", lo)
	}
	if hi, ok := f.p["maximum"]; ok {
		if bounds == "" {
			bounds = " up"
		}
		bounds += fmt.Sprintf(" to %v", hi)
	}
	switch f.p["type"] {
	case "boolean":
		return "yes/no"
	case "integer":
		return "whole number" + bounds
	case "number":
		return "number" + bounds
	}
	if format, _ := f.p["format"].(string); format != "" {
		return format
	}
	return ""
}

// show renders a value (a default) with the titles of its choices.
func (f field) show(v any) string {
	if list, ok := v.([]any); ok {
		parts := make([]string, len(list))
		for i, x := range list {
			parts[i] = f.show(x)
		}
		return strings.Join(parts, ", ")
	}
	for _, c := range f.choices {
		if fmt.Sprint(c.value) == fmt.Sprint(v) && c.title != "" {
			return c.title
		}
	}
	return fmt.Sprint(v)
}

// read turns one answer line into the field's value. set is false when
// the field is left out (an empty line: the gateway fills the default).
func (f field) read(line string) (v any, set bool, err error) {
	if line == "" {
		if _, hasDefault := f.p["default"]; f.required && !hasDefault {
			return nil, false, fmt.Errorf("%s is required", f.name)
		}
		return nil, false, nil
	}
	switch {
	case f.multi:
		var list []any
		for _, part := range strings.Split(line, ",") {
			c, err := f.pick(strings.TrimSpace(part))
			if err != nil {
				return nil, false, err
			}
			list = append(list, c)
		}
		v = list
	case len(f.choices) > 0:
		if v, err = f.pick(line); err != nil {
			return nil, false, err
		}
	default:
		if v, err = scalar(f.p["type"], line); err != nil {
			return nil, false, err
		}
	}
	if f.check != nil {
		if err := f.check.Validate(f.name, map[string]any{f.name: v}); err != nil {
			var ae *tools.ArgumentError
			if errors.As(err, &ae) {
				return nil, false, errors.New(strings.ReplaceAll(ae.Feedback(), "/"+f.name+": ", ""))
			}
			return nil, false, err
		}
	}
	return v, true, nil
}

// pick finds the choice an answer names: its number, its value or its
// title (letter case aside).
func (f field) pick(s string) (any, error) {
	if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= len(f.choices) {
		return f.choices[n-1].value, nil
	}
	for _, c := range f.choices {
		if strings.EqualFold(fmt.Sprint(c.value), s) || (c.title != "" && strings.EqualFold(c.title, s)) {
			return c.value, nil
		}
	}
	return nil, fmt.Errorf("%q is not one of the choices 1 to %d", s, len(f.choices))
}

// scalar reads a line as a property type's value.
func scalar(typ any, line string) (any, error) {
	switch typ {
	case "integer":
		n, err := strconv.ParseInt(line, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a whole number", line)
		}
		return n, nil
	case "number":
		x, err := strconv.ParseFloat(line, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", line)
		}
		return x, nil
	case "boolean":
		switch strings.ToLower(line) {
		case "y", "yes", "true", "1":
			return true, nil
		case "n", "no", "false", "0":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not yes or no", line)
	}
	return line, nil
}
