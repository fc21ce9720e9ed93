package mcpgateway

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestObjectsTakeRowsFromStructuredContent(t *testing.T) {
	t.Parallel()
	text := map[string]any{"type": "text", "text": "a copy of the data for old clients"}
	image := map[string]any{"type": "image", "mime_type": "image/png", "data": "AAAA"}
	tests := []struct {
		name       string
		content    []map[string]any
		structured any
		want       []map[string]any
	}{
		{"text only", []map[string]any{text}, nil, []map[string]any{text}},
		{"one array of objects", []map[string]any{text}, json.RawMessage(`{"todos": [{"id": 1}, {"id": 2}], "count": 2}`),
			[]map[string]any{{"id": float64(1)}, {"id": float64(2)}}},
		{"a single object field", []map[string]any{text}, json.RawMessage(`{"todo": {"id": 7}}`),
			[]map[string]any{{"id": float64(7)}}},
		{"a plain object", nil, json.RawMessage(`{"temperature": 21, "conditions": "sunny"}`),
			[]map[string]any{{"temperature": float64(21), "conditions": "sunny"}}},
		{"two arrays stay one row", nil, json.RawMessage(`{"a": [{"x": 1}], "b": [{"y": 2}]}`),
			[]map[string]any{{"a": []any{map[string]any{"x": float64(1)}}, "b": []any{map[string]any{"y": float64(2)}}}}},
		{"a top-level array", nil, json.RawMessage(`[{"x": 1}]`), []map[string]any{{"x": float64(1)}}},
		{"a scalar", nil, json.RawMessage(`42`), []map[string]any{{"value": float64(42)}}},
		{"images are kept", []map[string]any{text, image}, json.RawMessage(`{"todo": {"id": 7}}`),
			[]map[string]any{{"id": float64(7)}, image}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &CallResult{Content: tc.content, Structured: tc.structured}
			if diff := cmp.Diff(tc.want, r.objects()); diff != "" {
				t.Errorf("objects() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
