package llm

import (
	"encoding/json"
	"maps"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// coerce turns the text of a value into the type property p declares. A
// value that does not fit stays a string, for the tool's validation to
// report.
func coerce(p property, raw string, quoted bool) any {
	switch p.typ {
	case "integer", "number":
		if v, ok := parseNumber(raw); ok {
			return v
		}
	case "boolean":
		if v, ok := parseBool(raw); ok {
			return v
		}
	case "array":
		return parseArray(p, raw)
	case "object":
		var v map[string]any
		if json.Unmarshal([]byte(raw), &v) == nil {
			return v
		}
	case "":
		if quoted {
			return raw
		}
		if v, ok := parseBool(raw); ok {
			return v
		}
		if v, ok := parseNumber(raw); ok {
			return v
		}
	}
	for _, e := range p.enum {
		if s, ok := e.(string); ok && strings.EqualFold(s, raw) {
			return s
		}
	}
	return raw
}

// parseNumber reads a number; integral values become int64 so they encode
// without a fraction. A fraction given for an integer stays a float for the
// tool's validation to report.
func parseNumber(raw string) (any, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, false
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f), true
	}
	return f, true
}

func parseBool(raw string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(raw)) {
	case "true", "yes", "on":
		return true, true
	case "false", "no", "off":
		return false, true
	}
	return false, false
}

// parseArray reads a JSON array, or a comma-separated list, with items of
// the schema's item type.
func parseArray(p property, raw string) []any {
	var v []any
	if json.Unmarshal([]byte(raw), &v) == nil {
		return v
	}
	raw = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(raw), "["), "]")
	item := property{typ: p.itemType}
	out := []any{}
	for _, part := range strings.Split(raw, ",") {
		part = strings.Trim(strings.TrimSpace(part), `"'`)
		if part != "" {
			out = append(out, coerce(item, part, false))
		}
	}
	return out
}

var (
	// missingRE finds the properties named by "missing property 'title'"
	// or "missing properties: 'a', 'b'" (jsonschema's wording).
	missingRE = regexp.MustCompile(`(?i)missing propert(?:y|ies)\W*((?:'[^']+'[\s,]*)+)`)
	quotedRE  = regexp.MustCompile(`'([^']+)'`)
	// pointerRE finds the JSON pointers ("/limit") errors point at.
	pointerRE = regexp.MustCompile(`(?:^|[\s'"(;:,])/([A-Za-z0-9_\-]+)`)
)

// adjustArgs changes args after the tool refused them with message: a
// missing required property is filled (the schema's default, else free text
// for a string); an invalid optional property is dropped; an invalid
// required number is brought within its bounds. It reports whether anything
// changed; when nothing did, trying again is pointless. args is not
// modified.
func adjustArgs(args map[string]any, s schema, message, prompt string, skip map[string]bool) (map[string]any, bool) {
	out := maps.Clone(args)
	changed := false
	for _, m := range missingRE.FindAllStringSubmatch(message, -1) {
		for _, n := range quotedRE.FindAllStringSubmatch(m[1], -1) {
			p, ok := s.prop(n[1])
			if _, set := out[n[1]]; !ok || set {
				continue
			}
			if p.def != nil {
				out[p.name] = p.def
				changed = true
				continue
			}
			if isStringy(p) {
				if text := freeText(freePrompt(prompt, s), p, skip); text != "" {
					out[p.name] = text
					changed = true
				}
			}
		}
	}
	for _, m := range pointerRE.FindAllStringSubmatch(message, -1) {
		p, ok := s.prop(m[1])
		v, set := out[m[1]]
		if !ok || !set {
			continue
		}
		if !s.isRequired(p.name) {
			delete(out, p.name)
			changed = true
			continue
		}
		if c, ok := clamp(p, v); ok {
			out[p.name] = c
			changed = true
		}
	}
	return out, changed
}

// clamp brings a number within its property's minimum and maximum.
func clamp(p property, v any) (any, bool) {
	var f float64
	switch n := v.(type) {
	case int64:
		f = float64(n)
	case float64:
		f = n
	default:
		return nil, false
	}
	c := f
	if p.min != nil && c < *p.min {
		c = *p.min
	}
	if p.max != nil && c > *p.max {
		c = *p.max
	}
	if p.typ == "integer" {
		c = math.Trunc(c)
	}
	if c == f {
		return nil, false
	}
	if c == math.Trunc(c) {
		return int64(c), true
	}
	return c, true
}
