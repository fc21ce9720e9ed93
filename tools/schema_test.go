package tools

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const todoSchema = `{
  "type": "object",
  "properties": {
    "title": {"type": "string"},
    "priority": {"type": "integer", "minimum": 1, "maximum": 5},
    "status": {"type": "string", "enum": ["active", "completed"]},
    "tags": {"type": "array", "items": {"type": "string"}}
  },
  "required": ["title"]
}`

func TestSchemaValidate(t *testing.T) {
	s, err := CompileSchema(json.RawMessage(todoSchema))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args map[string]any
		want string // "" means valid
	}{
		{"valid", map[string]any{"title": "milk", "priority": json.Number("3")}, ""},
		{"valid go int", map[string]any{"title": "milk", "priority": 3}, ""},
		{"missing and maximum", map[string]any{"priority": json.Number("9")},
			"invalid tool_inputs for create_todo: missing property 'title'; /priority: must be <= 5"},
		{"enum", map[string]any{"title": "x", "status": "done"},
			`invalid tool_inputs for create_todo: /status: value must be one of "active", "completed"`},
		{"type", map[string]any{"title": 7}, "invalid tool_inputs for create_todo: /title: expected string, but got number"},
		{"array item", map[string]any{"title": "x", "tags": []any{"a", 1.5}}, "invalid tool_inputs for create_todo: /tags/1: expected string, but got number"},
		{"nil args", nil, "invalid tool_inputs for create_todo: missing property 'title'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Validate("create_todo", tt.args)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var ae *ArgumentError
			if !errors.As(err, &ae) || !errors.Is(err, ErrInvalidArguments) {
				t.Fatalf("Validate = %v, want an *ArgumentError", err)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("Validate error\n got: %s\nwant: %s", got, tt.want)
			}
		})
	}
}

func TestSchemaComposition(t *testing.T) {
	raw := `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
	  "properties": {"kind": {"type": "string"}, "n": {"type": "integer"}},
	  "allOf": [{"required": ["kind"]}],
	  "if": {"properties": {"kind": {"const": "count"}}},
	  "then": {"required": ["n"]}}`
	s, err := CompileSchema(json.RawMessage(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate("t", map[string]any{"kind": "other"}); err != nil {
		t.Errorf("kind=other: %v", err)
	}
	err = s.Validate("t", map[string]any{"kind": "count"})
	if err == nil || !strings.Contains(err.Error(), "missing property 'n'") {
		t.Errorf("if/then not enforced: %v", err)
	}
	err = s.Validate("t", map[string]any{})
	if err == nil || !strings.Contains(err.Error(), "missing property 'kind'") {
		t.Errorf("allOf not enforced: %v", err)
	}
}

func TestCompileSchemaErrors(t *testing.T) {
	tests := []struct{ name, raw string }{
		{"remote ref", `{"$ref": "https://example.com/schema.json"}`},
		{"file ref", `{"$ref": "file:///etc/passwd"}`},
		{"bad json", `{"type": `},
		{"bad keyword value", `{"type": 12}`},
		{"unknown metaschema", `{"$schema": "https://example.com/meta"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := CompileSchema(json.RawMessage(tt.raw))
			if err == nil {
				t.Fatal("CompileSchema succeeded")
			}
			if s == nil || s.Err() == nil {
				t.Fatal("compile error not kept with the schema")
			}
			if verr := s.Validate("t", map[string]any{}); verr == nil || errors.Is(verr, ErrInvalidArguments) {
				t.Errorf("Validate on a broken schema = %v, want the compile error", verr)
			}
		})
	}
}

func TestCompileSchemaEmptyAcceptsAll(t *testing.T) {
	for _, raw := range []string{"", "null", "{}"} {
		s, err := CompileSchema(json.RawMessage(raw))
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if err := s.Validate("t", map[string]any{"a": 1}); err != nil {
			t.Errorf("%q: %v", raw, err)
		}
	}
}

func TestSchemaLocalRef(t *testing.T) {
	raw := `{"type": "object", "$defs": {"p": {"type": "integer", "maximum": 5}},
	  "properties": {"priority": {"$ref": "#/$defs/p"}}}`
	s, err := CompileSchema(json.RawMessage(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate("t", map[string]any{"priority": 6}); err == nil || !strings.Contains(err.Error(), "/priority: must be <= 5") {
		t.Errorf("local $ref: %v", err)
	}
}

func FuzzSchemaValidate(f *testing.F) {
	f.Add(todoSchema, `{"title": "x", "priority": 3}`)
	f.Add(todoSchema, `{"priority": 9, "status": "nope"}`)
	f.Add(`{"allOf": [{"required": ["a"]}], "if": {"required": ["b"]}, "then": {"maxProperties": 1}}`, `{"a": [1, {"b": null}]}`)
	f.Add(`{"$ref": "#/$defs/x", "$defs": {"x": {"$ref": "#/$defs/x"}}}`, `{}`)
	f.Fuzz(func(t *testing.T, schema, args string) {
		s, _ := CompileSchema(json.RawMessage(schema))
		var m map[string]any
		if json.Unmarshal([]byte(args), &m) != nil {
			return
		}
		err := s.Validate("fuzz", m)
		var ae *ArgumentError
		if errors.As(err, &ae) && len(ae.Problems) == 0 {
			t.Fatalf("ArgumentError without problems for schema %q args %q", schema, args)
		}
	})
}

func TestWithoutNulls(t *testing.T) {
	sch, err := CompileSchema(json.RawMessage(`{"type": "object", "required": ["region", "must"], "properties": {
		"region": {"type": "string"}, "must": {"type": "boolean"}, "verbose": {"type": "boolean"},
		"clear": {"type": ["string", "null"]}, "anything": {}}}`))
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"region": "us", "must": nil, "verbose": nil, "clear": nil, "anything": nil, "extra": nil}
	got := sch.WithoutNulls(args)
	if _, ok := got["verbose"]; ok {
		t.Error("the null of an optional boolean was kept")
	}
	for _, k := range []string{"must", "clear", "anything", "extra"} {
		if _, ok := got[k]; !ok {
			t.Errorf("%s's null was dropped: a required property, one that takes null, one of any type and one not in the schema keep it", k)
		}
	}
	if _, ok := args["verbose"]; !ok {
		t.Error("WithoutNulls modified its argument")
	}
	same := map[string]any{"region": "us"}
	if out := sch.WithoutNulls(same); len(out) != 1 || out["region"] != "us" {
		t.Errorf("WithoutNulls without nulls = %v", out)
	}
}
