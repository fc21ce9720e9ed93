package llm

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustSchema(t *testing.T, raw string) schema {
	t.Helper()
	s := parseSchema([]byte(raw))
	if len(s.props) == 0 && raw != `{}` {
		t.Fatalf("schema %s has no properties", raw)
	}
	return s
}

const (
	itemSchema = `{"type": "object", "properties": {
		"title": {"type": "string"},
		"description": {"type": "string"},
		"priority": {"type": "integer", "minimum": 1, "maximum": 5},
		"tags": {"type": "array", "items": {"type": "string"}},
		"ids": {"type": "array", "items": {"type": "integer"}},
		"status": {"type": "string", "enum": ["active", "completed"]},
		"done": {"type": "boolean"},
		"code": {"type": "string"},
		"ratio": {"type": "number"},
		"extra": {"type": "object"},
		"loose": {}},
		"required": ["title"]}`
	loneSchema = `{"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}`
	sumSchema  = `{"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}`
	idSchema   = `{"type": "object", "properties": {"item_id": {"type": "integer"}, "note": {"type": "string"}}, "required": ["item_id"]}`
	camel      = `{"type": "object", "properties": {"messageType": {"type": "string", "enum": ["error", "success"]}, "includeImage": {"type": "boolean"}}}`
)

func TestExtractArgs(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		prompt string
		skip   []string
		want   map[string]any
	}{
		{"double quoted value and number", itemSchema, `add an item title="Buy milk" priority=2`, nil,
			map[string]any{"title": "Buy milk", "priority": int64(2)}},
		{"single quoted value", itemSchema, `title='Buy milk' done=true`, nil,
			map[string]any{"title": "Buy milk", "done": true}},
		{"curly quotes", itemSchema, "title=“Buy milk”", nil,
			map[string]any{"title": "Buy milk"}},
		{"quoted number for integer becomes number", itemSchema, `title=x priority="4"`, nil,
			map[string]any{"title": "x", "priority": int64(4)}},
		{"number for string stays string", itemSchema, `title=x code=42`, nil,
			map[string]any{"title": "x", "code": "42"}},
		{"float", itemSchema, `title=x ratio=0.25`, nil,
			map[string]any{"title": "x", "ratio": 0.25}},
		{"comma list for array", itemSchema, `title=x tags=work,home`, nil,
			map[string]any{"title": "x", "tags": []any{"work", "home"}}},
		{"bracket list for array", itemSchema, `title=x tags=[work, home] ids=[1,2]`, nil,
			map[string]any{"title": "x", "tags": []any{"work", "home"}, "ids": []any{1.0, 2.0}}},
		{"quoted list for array", itemSchema, `title=x tags="a, b"`, nil,
			map[string]any{"title": "x", "tags": []any{"a", "b"}}},
		{"integer items from comma list", itemSchema, `title=x ids=3,4`, nil,
			map[string]any{"title": "x", "ids": []any{int64(3), int64(4)}}},
		{"json object", itemSchema, `title=x extra={"k": 1}`, nil,
			map[string]any{"title": "x", "extra": map[string]any{"k": 1.0}}},
		{"untyped infers", itemSchema, `title=x loose=7`, nil,
			map[string]any{"title": "x", "loose": int64(7)}},
		{"enum value case folded", itemSchema, `title=x status=Completed`, nil,
			map[string]any{"title": "x", "status": "completed"}},
		{"colon pairs", itemSchema, `title: Buy milk, priority: 2`, nil,
			map[string]any{"title": "Buy milk", "priority": int64(2)}},
		{"colon value ends at next pair", itemSchema, `title: Buy milk with priority=3`, nil,
			map[string]any{"title": "Buy milk", "priority": int64(3)}},
		{"unknown key ignored", itemSchema, `title=x colour=red`, nil,
			map[string]any{"title": "x"}},
		{"quoted string to first required string", itemSchema, `please add "Buy milk" soon`, nil,
			map[string]any{"title": "Buy milk"}},
		{"second quote to next string", itemSchema, `add "Buy milk" "from the shop"`, nil,
			map[string]any{"title": "Buy milk", "description": "from the shop"}},
		{"apostrophe is no quote", loneSchema, `send don't panic`, []string{"send"},
			map[string]any{"message": "don't panic"}},
		{"lone required string from free text", loneSchema, `echo hello world`, []string{"echo"},
			map[string]any{"message": "hello world"}},
		{"lone required string quoted", loneSchema, `echo "hi there"`, []string{"echo"},
			map[string]any{"message": "hi there"}},
		{"key=value wins", loneSchema, `echo message="hi"`, []string{"echo"},
			map[string]any{"message": "hi"}},
		{"free text drops connectors", itemSchema, `create an item titled Buy milk`, []string{"create", "item"},
			map[string]any{"title": "Buy milk"}},
		{"named number", itemSchema, `title=x with priority 2`, nil,
			map[string]any{"title": "x", "priority": int64(2)}},
		{"enum word", itemSchema, `list completed items title=x`, []string{"list", "item"},
			map[string]any{"title": "x", "status": "completed"}},
		{"lone number to required integer", idSchema, `remove item 7`, []string{"remove"},
			map[string]any{"item_id": int64(7)}},
		{"two numbers fill nothing", idSchema, `remove 7 and 8`, []string{"remove"},
			map[string]any{}},
		{"number pairs", sumSchema, `add a=1.5 b=2`, nil,
			map[string]any{"a": 1.5, "b": int64(2)}},
		{"camel case key by kebab name", camel, `message-type=error include_image=yes`, nil,
			map[string]any{"messageType": "error", "includeImage": true}},
		{"pair inside quotes is text", loneSchema, `echo "a=b"`, []string{"echo"},
			map[string]any{"message": "a=b"}},
		{"empty prompt", itemSchema, ``, nil, map[string]any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			skip := map[string]bool{}
			for _, w := range tt.skip {
				skip[w] = true
			}
			got := extractArgs(tt.prompt, mustSchema(t, tt.schema), skip)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("extractArgs(%q) mismatch (-want +got):\n%s", tt.prompt, diff)
			}
		})
	}
}

func TestAdjustArgs(t *testing.T) {
	s := mustSchema(t, `{"type": "object", "properties": {
		"title": {"type": "string"},
		"priority": {"type": "integer", "minimum": 1, "maximum": 5},
		"level": {"type": "integer", "minimum": 1, "maximum": 3},
		"kind": {"type": "string", "default": "plain"}},
		"required": ["title", "level", "kind"]}`)
	tests := []struct {
		name        string
		args        map[string]any
		message     string
		want        map[string]any
		wantChanged bool
	}{
		{"invalid optional dropped", map[string]any{"title": "x", "priority": int64(9), "level": int64(1)},
			"invalid tool_inputs for t: /priority: must be <= 5",
			map[string]any{"title": "x", "level": int64(1)}, true},
		{"invalid required clamped", map[string]any{"title": "x", "level": int64(7)},
			"jsonschema: '/level' does not validate: must be <= 3",
			map[string]any{"title": "x", "level": int64(3)}, true},
		{"missing string from free text", map[string]any{"level": int64(1)},
			"invalid tool_inputs for t: missing property 'title'",
			map[string]any{"title": "Buy milk", "level": int64(1)}, true},
		{"missing with default", map[string]any{"title": "x", "level": int64(1)},
			"missing properties: 'kind'",
			map[string]any{"title": "x", "level": int64(1), "kind": "plain"}, true},
		{"nothing to do", map[string]any{"title": "x"},
			"server is on fire",
			map[string]any{"title": "x"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := adjustArgs(tt.args, s, tt.message, "make Buy milk", map[string]bool{"make": true})
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("adjustArgs mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTerms(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"create_todo", []string{"create", "todo"}},
		{"get-tiny-image", []string{"get", "tiny", "image"}},
		{"getTinyImage", []string{"get", "tiny", "image"}},
		{"List all the TODOs, please", []string{"list", "todo"}},
		{"Echoes entries boxes this", []string{"echo", "entry", "box"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, terms(tt.in)); diff != "" {
				t.Errorf("terms(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestExtractArgsQuoteInsidePair(t *testing.T) {
	s := mustSchema(t, loneSchema+"")
	s.props = append(s.props, property{name: "code", typ: "string"})
	got := extractArgs(`code=ab"cd" "hello"`, s, nil)
	want := map[string]any{"code": `ab"cd"`, "message": "hello"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}
