package session

import (
	"encoding/json"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/tools"
)

// callParams returns the JSON of a tools/call's params byte for byte as
// p.MarshalJSON writes it, for the params the gateway sends (a name,
// arguments and _meta), and false for any other (a task, raw arguments, a
// later round's answers), which the caller marshals as usual. mcp-go
// writes _meta through a map built per call, and every member through
// encoding/json's reflection, then compacts the lot: a few µs of each
// call, for a handful of members whose types are known here.
func callParams(p mcp.CallToolParams) (json.RawMessage, bool) {
	if p.Task != nil || p.RawArguments != nil || p.InputResponses != nil || p.RequestState != "" {
		return nil, false
	}
	b := make([]byte, 0, 128)
	b = append(b, `{"name":`...)
	b = tools.AppendJSONString(b, p.Name, true)
	if p.Arguments != nil {
		args, err := json.Marshal(p.Arguments)
		if err != nil {
			return nil, false
		}
		b = append(append(b, `,"arguments":`...), args...)
	}
	if p.Meta != nil {
		b = append(b, `,"_meta":`...)
		var ok bool
		if b, ok = appendMeta(b, p.Meta); !ok {
			return nil, false
		}
	}
	return append(b, '}'), true
}

// appendMeta appends m as (*mcp.Meta).MarshalJSON writes it: its
// progress token and additional fields as one object, keys sorted, the
// fields winning over the token.
func appendMeta(b []byte, m *mcp.Meta) ([]byte, bool) {
	const token = "progressToken"
	keys := make([]string, 0, len(m.AdditionalFields)+1)
	if _, shadowed := m.AdditionalFields[token]; m.ProgressToken != nil && !shadowed {
		keys = append(keys, token)
	}
	for k := range m.AdditionalFields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(tools.AppendJSONString(b, k, true), ':')
		v, ok := m.AdditionalFields[k]
		if !ok {
			v = m.ProgressToken
		}
		if s, isString := v.(string); isString {
			b = tools.AppendJSONString(b, s, true)
			continue
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return b, false
		}
		b = append(b, raw...)
	}
	return append(b, '}'), true
}
