package session

import (
	"errors"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/tools"
)

func TestFormSchema(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		schema any
		err    string
	}{
		{"flat", map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}, ""},
		{"not an object", map[string]any{"type": "string"}, `type must be "object"`},
		{"nested", map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "object"}}}, `property "a": type "object" is not a primitive`},
		{"free array", map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}}, "multiple choice"},
		{"required unknown", map[string]any{"type": "object", "properties": map[string]any{}, "required": []any{"b"}}, "not a property"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := formSchema(tc.schema)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("formSchema = %v, want %q", err, tc.err)
			}
		})
	}
	schema, _ := formSchema(map[string]any{"type": "object", "required": []any{"name"}, "properties": map[string]any{
		"name": map[string]any{"type": "string"}, "n": map[string]any{"type": "integer", "default": 42, "maximum": 50}}})
	check, err := formCheck(schema)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := check(map[string]any{"name": "x"}); err != nil || got["n"] != 42.0 {
		t.Errorf("check fills defaults: %v %v", got, err)
	}
	var ae *tools.ArgumentError
	if _, err := check(map[string]any{"n": 99}); !errors.As(err, &ae) {
		t.Errorf("check of a bad answer = %v, want an ArgumentError", err)
	}
}
