package tools

import (
	"encoding/json"
	"math"
	"math/big"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// quickSchema is a tool's input schema simple enough to be checked
// without the library: an object whose properties are each of one or more
// types, with string enums, lengths, patterns, formats, integer bounds and
// an array's items of the same kind at most (nearly every MCP tool's). jsonschema/v5 allocates a score of values per
// validation (closures, scopes, location strings); this check allocates
// nothing.
//
// It only ever says yes: inputs it passes, the library passes too
// (FuzzQuickSchema holds it to that). Anything else, and anything it is
// not sure of (an integer written 1.0, a number past int64), goes to the
// library, which also writes the errors.
type quickSchema struct {
	required []string
	closed   bool // additionalProperties: false
	props    map[string]quickProp
}

// quickProp is one property's checks.
type quickProp struct {
	any      bool           // true as a schema, or no checks at all
	types    []string       // JSON types; empty: any
	enum     []string       // nil: no enum
	min, max int            // lengths; -1: none
	lo, hi   *int64         // inclusive integer bounds; nil: none
	items    *quickProp     // each element's checks, for an array; nil: none
	pattern  *regexp.Regexp // the library's own, compiled; nil: none
	format   func(any) bool // the check of a format the draft asserts; nil: none
}

// newQuickSchema returns the quick check of s, or nil when s is not
// simple enough.
func newQuickSchema(s *jsonschema.Schema) *quickSchema {
	if s.Always != nil {
		if *s.Always {
			return &quickSchema{}
		}
		return nil
	}
	if !onlyFields(s, rootFields) || len(s.Types) > 1 || len(s.Types) == 1 && s.Types[0] != "object" {
		return nil
	}
	q := &quickSchema{required: s.Required, props: make(map[string]quickProp, len(s.Properties))}
	switch ap := s.AdditionalProperties.(type) {
	case nil:
	case bool:
		q.closed = !ap
	default:
		return nil
	}
	for name, ps := range s.Properties {
		p, ok := newQuickProp(ps)
		if !ok {
			return nil
		}
		q.props[name] = p
	}
	return q
}

func newQuickProp(s *jsonschema.Schema) (quickProp, bool) {
	p := quickProp{min: s.MinLength, max: s.MaxLength}
	if s.Always != nil {
		return quickProp{any: true}, *s.Always
	}
	if !onlyFields(s, propFields) {
		return p, false
	}
	p.types = s.Types
	p.pattern = s.Pattern
	if !reflect.ValueOf(s).Elem().FieldByName("format").IsZero() {
		// The library asserts the format with its own check of that
		// name (the compiler here adds none of its own).
		f, ok := jsonschema.Formats[s.Format]
		if !ok {
			return p, false
		}
		p.format = f
	}
	if s.Enum != nil {
		p.enum = make([]string, 0, len(s.Enum))
		for _, e := range s.Enum {
			str, ok := e.(string)
			if !ok {
				return p, false
			}
			p.enum = append(p.enum, str)
		}
	}
	var ok bool
	if p.lo, ok = intBound(s.Minimum, s.ExclusiveMinimum, 1); !ok {
		return p, false
	}
	if p.hi, ok = intBound(s.Maximum, s.ExclusiveMaximum, -1); !ok {
		return p, false
	}
	items := s.Items2020
	switch it := s.Items.(type) {
	case nil:
	case *jsonschema.Schema:
		items = it
	default: // a tuple of schemas
		return p, false
	}
	if items != nil {
		ip, ok := newQuickProp(items)
		if !ok {
			return p, false
		}
		p.items = &ip
	}
	p.any = len(p.types) == 0 && p.enum == nil && p.min < 0 && p.max < 0 && p.lo == nil && p.hi == nil && p.items == nil && p.pattern == nil && p.format == nil
	return p, true
}

// intBound turns an inclusive and an exclusive bound (either nil) into one
// inclusive integer bound; step is +1 for a minimum, -1 for a maximum. ok
// is false for a bound that is not an int64, or for both at once.
func intBound(incl, excl *big.Rat, step int64) (*int64, bool) {
	r := incl
	if excl != nil {
		if incl != nil {
			return nil, false
		}
		r = excl
	}
	if r == nil {
		return nil, true
	}
	if !r.IsInt() || !r.Num().IsInt64() {
		return nil, false
	}
	n := r.Num().Int64()
	if excl != nil { // an integer past an exclusive bound is at least one past it
		if step > 0 && n == math.MaxInt64 || step < 0 && n == math.MinInt64 {
			return nil, false
		}
		n += step
	}
	return &n, true
}

// The fields of jsonschema.Schema a quick schema may have set: those it
// checks, and those that check nothing (where the schema is, its draft,
// annotations). Every other field must hold its unset value, so that a
// keyword the library adds later is never passed over.
var (
	ignoredFields = []string{"Location", "Draft", "meta", "vocab", "Title", "Description", "Default",
		"Comment", "ReadOnly", "WriteOnly", "Examples", "Deprecated", "enumError",
		"ContainsEval"} // ContainsEval: how "contains" counts, which must be unset
	rootFields = append([]string{"Types", "Required", "Properties", "AdditionalProperties"}, ignoredFields...)
	// format is the check of Format, set where the library asserts it.
	propFields = append([]string{"Types", "Enum", "MinLength", "MaxLength", "Minimum", "Maximum",
		"ExclusiveMinimum", "ExclusiveMaximum", "Items", "Items2020", "Pattern", "Format", "format"}, ignoredFields...)
	// unsetValues are the fields whose unset value is not their zero.
	unsetValues = map[string]int64{"MinProperties": -1, "MaxProperties": -1, "MinItems": -1, "MaxItems": -1,
		"MinContains": 1, "MaxContains": -1, "MinLength": -1, "MaxLength": -1}
)

// onlyFields reports whether every field of s other than allowed is unset.
func onlyFields(s *jsonschema.Schema, allowed []string) bool {
	v := reflect.ValueOf(s).Elem()
	t := v.Type()
	for i := range t.NumField() {
		name := t.Field(i).Name
		if slices.Contains(allowed, name) {
			continue
		}
		f := v.Field(i)
		if unset, ok := unsetValues[name]; ok {
			if f.Int() != unset {
				return false
			}
			continue
		}
		if !f.IsZero() {
			return false
		}
	}
	return true
}

// valid reports whether v, the inputs as normalise returns them, surely
// pass the schema.
func (q *quickSchema) valid(v any) bool {
	if q.props == nil { // the schema true
		return true
	}
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for _, name := range q.required {
		if _, ok := m[name]; !ok {
			return false
		}
	}
	for name, val := range m {
		p, known := q.props[name]
		if !known {
			if q.closed {
				return false
			}
			continue
		}
		if !p.any && !p.valid(val) {
			return false
		}
	}
	return true
}

func (p *quickProp) valid(v any) bool {
	if len(p.types) > 0 && !p.typed(v) || p.format != nil && !p.format(v) {
		return false
	}
	switch x := v.(type) {
	case string:
		if p.enum != nil && !slices.Contains(p.enum, x) || p.pattern != nil && !p.pattern.MatchString(x) {
			return false
		}
		if p.min >= 0 || p.max >= 0 {
			n := utf8.RuneCountInString(x)
			if p.min >= 0 && n < p.min || p.max >= 0 && n > p.max {
				return false
			}
		}
	case json.Number:
		if p.enum != nil {
			return false
		}
		if p.lo != nil || p.hi != nil {
			n, ok := plainInt(x)
			if !ok || p.lo != nil && n < *p.lo || p.hi != nil && n > *p.hi {
				return false
			}
		}
	case []any:
		if p.enum != nil {
			return false
		}
		if p.items != nil && !p.items.any {
			for _, el := range x {
				if !p.items.valid(el) {
					return false
				}
			}
		}
	default:
		if p.enum != nil {
			return false
		}
	}
	return true
}

// typed reports whether v is of one of p's types.
func (p *quickProp) typed(v any) bool {
	var t string
	switch x := v.(type) {
	case nil:
		t = "null"
	case bool:
		t = "boolean"
	case string:
		t = "string"
	case []any:
		t = "array"
	case map[string]any:
		t = "object"
	case json.Number:
		if slices.Contains(p.types, "number") {
			return true
		}
		_, isInt := plainInt(x)
		return isInt && slices.Contains(p.types, "integer")
	default:
		return false
	}
	return slices.Contains(p.types, t)
}

// plainInt returns n when it is written as an integer that fits an int64
// (digits, a minus at most): the only integers this check decides on.
func plainInt(n json.Number) (int64, bool) {
	s := string(n)
	if s == "" {
		return 0, false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (i > 0 || c != '-') {
			return 0, false
		}
	}
	i, err := strconv.ParseInt(s, 10, 64)
	return i, err == nil
}
