package tools

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// quickSchemas are schemas the quick check takes, and ones it leaves to
// the library.
var (
	quickSchemas = []string{
		todoSchema,
		`{}`,
		`{"type":"object"}`,
		// zod-to-json-schema's output, as the TypeScript SDK sends it
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"q":{"type":"string","minLength":1,"maxLength":200,"description":"query"},"n":{"type":"number","exclusiveMinimum":0,"maximum":100},"k":{"type":"integer","exclusiveMaximum":10,"default":3},"on":{"type":"boolean"}},"required":["q"],"additionalProperties":false}`,
		`{"type":"object","properties":{"any":{},"yes":true,"v":{"type":["string","null"],"enum":["a","b"]}}}`,
		`{"type":"object","properties":{"m":{"type":"array","items":{"type":"array","items":{"type":"integer","minimum":-3}}}}}`,
		`{"type":"object","properties":{"a":{"type":"string","format":"no-such-format"}}}`, // not checked by the library either
		// todo-mcp's list_todos: a date's format and pattern
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"e":{"type":"string","format":"email"},"u":{"format":"uri"}}}`,
		`{"type":"object","properties":{"status":{"type":"string","enum":["active","completed"]},"due":{"type":"string","format":"date","pattern":"^\\d{4}-\\d{2}-\\d{2}$"}}}`,
	}
	slowSchemas = []string{
		`false`,
		`{"type":"object","properties":{"a":false}}`,
		`{"type":"object","properties":{"a":{"type":"number","minimum":0.5}}}`,
		`{"type":"object","properties":{"a":{"enum":[1,2]}}}`,
		`{"type":"object","properties":{"a":{"enum":["a",null]}}}`,
		`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string"}}}}}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}`,
		`{"type":"object","additionalProperties":{"type":"string"}}`,
		`{"type":"object","minProperties":1}`,
		`{"type":"object","properties":{"a":{"type":"array","prefixItems":[{"type":"string"}]}}}`,
		`{"type":"object","properties":{"a":{"type":"array","uniqueItems":true}}}`,
		`{"type":"object","properties":{"a":{"const":"x"}}}`,
		`{"anyOf":[{"required":["a"]},{"required":["b"]}]}`,
		`{"type":"object","properties":{"a":{"type":"integer","minimum":1,"exclusiveMinimum":0}}}`,
	}
)

func TestQuickSchemaCoverage(t *testing.T) {
	for _, raw := range quickSchemas {
		s, err := CompileSchema(json.RawMessage(raw))
		if err != nil || s.quick == nil {
			t.Errorf("%s: not checked quickly (%v)", raw, err)
		}
	}
	for _, raw := range slowSchemas {
		s, err := CompileSchema(json.RawMessage(raw))
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if s.quick != nil {
			t.Errorf("%s: checked quickly; want it left to the library", raw)
		}
	}
}

// TestQuickSchemaDecides: the quick check passes what it should, and what
// it does not pass is decided (and worded) by the library.
func TestQuickSchemaDecides(t *testing.T) {
	s, err := CompileSchema(json.RawMessage(todoSchema))
	if err != nil {
		t.Fatal(err)
	}
	for in, quick := range map[string]bool{
		`{"title":"x"}`: true,
		`{"title":"x","priority":5,"status":"active","tags":["a","b"],"other":{"k":1}}`: true,
		`{"title":"x","priority":1.0}`:  false, // an integer the library decides on
		`{"title":"x","priority":6}`:    false,
		`{"title":"x","status":"gone"}`: false,
		`{"title":"x","tags":["a",1]}`:  false,
		`{"priority":3}`:                false,
	} {
		v := decodeInputs(t, in)
		if got := s.quick.valid(v); got != quick {
			t.Errorf("%s: quick = %v, want %v", in, got, quick)
		}
	}
	err = s.Validate("create_todo", decodeInputs(t, `{"title":"x","priority":6}`))
	if ae, ok := errors.AsType[*ArgumentError](err); !ok || !slices.Contains(ae.Problems, "/priority: must be <= 5") {
		t.Errorf("priority 6: %v", err)
	}
	if err := s.Validate("create_todo", decodeInputs(t, `{"title":"x","priority":2.0}`)); err != nil {
		t.Errorf("priority 2.0: %v; the library takes it as an integer", err)
	}
}

func decodeInputs(t *testing.T, in string) map[string]any {
	t.Helper()
	m, ok := useNumber(in)
	if !ok {
		t.Fatalf("%s is not an object", in)
	}
	return m
}

// useNumber decodes in as the web layer and the model's calls do.
func useNumber(in string) (map[string]any, bool) {
	dec := json.NewDecoder(strings.NewReader(in))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil || m == nil {
		return nil, false
	}
	return m, true
}

// FuzzQuickSchema: inputs the quick check passes, the library passes.
func FuzzQuickSchema(f *testing.F) {
	inputs := []string{`{"e":"a@b.c","u":"http://x/"}`, `{"e":"nope","u":"::"}`, `{"e":5,"u":[1]}`, `{"due":"2026-02-30"}`, `{"status":"active","due":"2026-12-03"}`, `{"due":"2026-1-3"}`, `{"due":"x"}`, `{"title":"x","priority":5,"status":"active","tags":["a"]}`, `{"q":"é","n":0.5,"k":9,"on":true}`,
		`{"v":null,"any":[1],"yes":{}}`, `{"m":[[-3,4],[]]}`, `{"k":10,"n":-1e400}`, `{"q":"","x":1}`}
	for _, sch := range quickSchemas {
		for _, in := range inputs {
			f.Add(sch, in)
		}
	}
	f.Fuzz(func(t *testing.T, schema, in string) {
		s, err := CompileSchema(json.RawMessage(schema))
		if err != nil || s.quick == nil {
			return
		}
		m, ok := useNumber(in)
		if !ok {
			return
		}
		if s.quick.valid(m) {
			if err := s.compiled.Validate(any(m)); err != nil {
				t.Errorf("schema %s, inputs %s: the quick check passes them, the library says %v", schema, in, err)
			}
		}
	})
}

// BenchmarkValidate checks create_todo's inputs, quickly and through the
// library.
func BenchmarkValidate(b *testing.B) {
	s, err := CompileSchema(json.RawMessage(todoSchema))
	if err != nil {
		b.Fatal(err)
	}
	in, _ := useNumber(`{"title":"buy milk","priority":3,"status":"active","tags":["home"]}`)
	b.Run("quick", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Validate("create_todo", in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("library", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := s.compiled.Validate(any(in)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
