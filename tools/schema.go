package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// schemaURL is the name a compiled schema's root document gets. It is never
// fetched: the compiler is given the document itself.
const schemaURL = "mem:///input-schema.json"

// Schema is a compiled JSON Schema for a tool's inputs. A schema that failed
// to compile keeps its compile error, so a tool with a broken schema fails
// every validation with a clear error instead of crashing (the same idea as
// mcp-go's compiled-schema cache in server/input_validation.go).
//
// A *Schema is immutable after CompileSchema and safe for concurrent use.
type Schema struct {
	compiled *jsonschema.Schema
	quick    *quickSchema // nil when the schema is not simple enough
	err      error
}

// CompileSchema compiles raw, a JSON Schema as an MCP server sent it. The
// draft comes from its $schema keyword, 2020-12 when absent. Every $ref that
// would need loading a document (remote URL, file) is refused: schemas come
// from MCP servers and must not make the service fetch anything.
//
// An empty or null raw accepts every object. On a compile error CompileSchema
// returns the error and a non-nil *Schema whose Validate returns it too.
func CompileSchema(raw json.RawMessage) (*Schema, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = json.RawMessage("true")
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = func(url string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("loading %q is not allowed: schemas from MCP servers may only use local $refs", url)
	}
	s := &Schema{}
	if err := c.AddResource(schemaURL, bytes.NewReader(raw)); err != nil {
		s.err = fmt.Errorf("invalid input schema: %w", err)
		return s, s.err
	}
	compiled, err := c.Compile(schemaURL)
	if err != nil {
		s.err = fmt.Errorf("invalid input schema: %s", compileMessage(err))
		return s, s.err
	}
	s.compiled = compiled
	s.quick = newQuickSchema(compiled)
	return s, nil
}

// compileMessage keeps the part of a compile error a user can act on; the
// library prefixes it with the internal resource URL.
func compileMessage(err error) string {
	return strings.ReplaceAll(err.Error(), schemaURL, "schema")
}

// Err returns the compile error kept with the schema, or nil.
func (s *Schema) Err() error { return s.err }

// Validate checks args, the inputs for tool, against the schema. It returns
// nil, the compile error, or an *ArgumentError whose Problems name each
// field and the rule it breaks ("missing property 'title'", "/priority: must
// be <= 5"). A nil args map is validated as {}.
//
// Validate does not modify args. Numbers may be any Go numeric type or
// json.Number; args are normalised through JSON (with UseNumber) first,
// unless they already hold only JSON-decoded values.
func (s *Schema) Validate(tool string, args map[string]any) error {
	if s.err != nil {
		return fmt.Errorf("tool %s: %w", tool, s.err)
	}
	v, err := normalise(args)
	if err != nil {
		return &ArgumentError{Tool: tool, Problems: []string{"inputs are not valid JSON: " + err.Error()}}
	}
	if s.quick != nil && s.quick.valid(v) {
		return nil
	}
	err = s.compiled.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &ArgumentError{Tool: tool, Problems: []string{err.Error()}}
	}
	return &ArgumentError{Tool: tool, Problems: problems(ve)}
}

// WithoutNulls returns args without the nulls given for optional
// properties whose schema does not take null (a "type" without "null"):
// a model or a client that sends "verbose": null for a boolean means it
// gave none, and the tool is called without it. A required property, one
// that takes null or one of any type keeps its null. args itself is
// returned when nothing is dropped; it is never modified.
func (s *Schema) WithoutNulls(args map[string]any) map[string]any {
	if s == nil || s.compiled == nil {
		return args
	}
	var out map[string]any
	for k, v := range args {
		if v != nil || slices.Contains(s.compiled.Required, k) {
			continue
		}
		p := s.compiled.Properties[k]
		if p == nil || len(p.Types) == 0 || slices.Contains(p.Types, "null") {
			continue
		}
		if out == nil {
			out = maps.Clone(args)
		}
		delete(out, k)
	}
	if out == nil {
		return args
	}
	return out
}

// normalise returns args in the shape jsonschema/v5 expects: the output of
// encoding/json with UseNumber. Values that are already in that shape are
// used as they are, which keeps the hot path (inputs decoded from JSON by the
// web layer or the model) free of a JSON round trip.
func normalise(args map[string]any) (any, error) {
	if args == nil {
		return map[string]any{}, nil
	}
	if jsonShaped(args, 0) {
		return args, nil
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// jsonShaped reports whether v holds only what a json.Decoder with UseNumber
// produces. Deeply nested values are round-tripped rather than walked.
func jsonShaped(v any, depth int) bool {
	if depth > 32 {
		return false
	}
	switch x := v.(type) {
	case nil, bool, string, json.Number:
		return true
	case map[string]any:
		for _, e := range x {
			if !jsonShaped(e, depth+1) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range x {
			if !jsonShaped(e, depth+1) {
				return false
			}
		}
		return true
	default:
		return false
	}
}

// problems flattens a validation error tree into one line per leaf, in a
// stable order, without duplicates.
func problems(ve *jsonschema.ValidationError) []string {
	var out []string
	seen := map[string]bool{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		for _, p := range describe(e) {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	walk(ve)
	if len(out) == 0 {
		out = append(out, describe(ve)...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		return strings.HasPrefix(out[i], "missing") && !strings.HasPrefix(out[j], "missing")
	})
	return out
}

// describe turns one leaf error into readable lines. The library's "missing
// properties: 'a', 'b'" becomes one "missing property 'a'" line per name.
func describe(e *jsonschema.ValidationError) []string {
	prefix := ""
	if e.InstanceLocation != "" {
		prefix = e.InstanceLocation + ": "
	}
	msg := e.Message
	if rest, ok := strings.CutPrefix(msg, "missing properties: "); ok {
		var lines []string
		for _, name := range strings.Split(rest, ", ") {
			lines = append(lines, prefix+"missing property "+name)
		}
		return lines
	}
	if i := strings.Index(msg, " but found "); i > 0 {
		// "must be <= 5 but found 9": the rule is what the model needs.
		msg = msg[:i]
	}
	if msg == "" {
		msg = "does not match the schema"
	}
	return []string{prefix + msg}
}
