package session

import (
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestCallParamsIsMarshalJSON: callParams writes what mcp-go's MarshalJSON
// writes, byte for byte, and leaves the params it does not write to it.
func TestCallParamsIsMarshalJSON(t *testing.T) {
	var nilMap map[string]any
	for name, p := range map[string]mcp.CallToolParams{
		"plain":      {Name: "create_todo", Arguments: map[string]any{"title": "buy milk", "priority": 3}, Meta: &mcp.Meta{ProgressToken: "elysia-1"}},
		"html":       {Name: "a<b>&c", Arguments: map[string]any{"q": "<script>&amp;", "\u2028": []any{1.5, nil, true}}, Meta: &mcp.Meta{ProgressToken: "t<1>"}},
		"trace":      {Name: "t", Arguments: map[string]any{}, Meta: &mcp.Meta{ProgressToken: "elysia-2", AdditionalFields: map[string]any{"traceparent": "00-ab-cd-01", "tracestate": "k=v", "baggage": "a=b"}}},
		"shadowed":   {Name: "t", Meta: &mcp.Meta{ProgressToken: "mine", AdditionalFields: map[string]any{"progressToken": "theirs", "n": nil}}},
		"int token":  {Name: "t", Meta: &mcp.Meta{ProgressToken: int64(7), AdditionalFields: map[string]any{"o": map[string]any{"z": 1, "a": "x"}}}},
		"no token":   {Name: "t", Meta: &mcp.Meta{AdditionalFields: map[string]any{"x": "y"}}},
		"empty meta": {Name: "t", Meta: &mcp.Meta{}},
		"no args":    {Name: "t"},
		"nil map":    {Name: "t", Arguments: nilMap},
		"struct":     {Name: "t", Arguments: struct{ A string }{"<"}},
		"bad utf8":   {Name: "\xff", Arguments: map[string]any{"\xfe": "\xfd"}, Meta: &mcp.Meta{ProgressToken: "\xfc"}},
	} {
		t.Run(name, func(t *testing.T) {
			want, err := p.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			got, ok := callParams(p)
			if !ok || string(got) != string(want) {
				t.Errorf("callParams = %s, %v\n   mcp-go = %s", got, ok, want)
			}
		})
	}
	for name, p := range map[string]mcp.CallToolParams{
		"task":          {Name: "t", Task: &mcp.TaskParams{}},
		"raw arguments": {Name: "t", RawArguments: []byte(`{"a":1}`)},
		"round":         {Name: "t", MultiRoundTripParams: mcp.MultiRoundTripParams{RequestState: "s"}},
		"unmarshalable": {Name: "t", Arguments: map[string]any{"f": func() {}}},
		"bad meta":      {Name: "t", Meta: &mcp.Meta{AdditionalFields: map[string]any{"c": make(chan int)}}},
	} {
		if got, ok := callParams(p); ok {
			t.Errorf("%s: callParams wrote %s; want it left to MarshalJSON", name, got)
		}
	}
}

// FuzzCallParams holds callParams to mcp-go's MarshalJSON on any strings.
func FuzzCallParams(f *testing.F) {
	f.Add("create_todo", "title", "buy <milk>", "elysia-1", "traceparent", "00-1-2-01")
	f.Add("\u2028", "\xff", "&", "", "progressToken", "x")
	f.Fuzz(func(t *testing.T, name, key, value, token, metaKey, metaValue string) {
		p := mcp.CallToolParams{Name: name, Arguments: map[string]any{key: value, "n": 1},
			Meta: &mcp.Meta{ProgressToken: token, AdditionalFields: map[string]any{metaKey: metaValue}}}
		want, err := p.MarshalJSON()
		if err != nil {
			t.Skip()
		}
		if got, ok := callParams(p); !ok || string(got) != string(want) {
			t.Errorf("callParams = %s, %v\n   mcp-go = %s", got, ok, want)
		}
	})
}
