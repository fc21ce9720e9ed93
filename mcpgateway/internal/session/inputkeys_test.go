package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestInputRoundClaims: each handler of a round claims the key of the
// question it got, matched by kind and params; two equal questions get
// one key each; a key over maxInputKeyBytes is not passed on; a result
// that is not input_required, or a ctx without a round, records nothing.
func TestInputRoundClaims(t *testing.T) {
	ctx := withInputRound(context.Background())
	long := strings.Repeat("k", maxInputKeyBytes+1)
	noteInputRound(ctx, []byte(`{"resultType":"input_required","inputRequests":{
		"a":{"method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object","properties":{}}}},
		"b":{"method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object","properties":{}}}},
		"c":{"method":"elicitation/create","params":{"message":"age?","requestedSchema":{"type":"object","properties":{}}}},
		"r":{"method":"roots/list"},
		"`+long+`":{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":5}}}}`))
	name := mcp.ElicitationParams{Message: "name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}}
	age := mcp.ElicitationParams{Message: "age?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}}
	for _, tc := range []struct {
		method mcp.MCPMethod
		params any
		want   string
	}{
		{mcp.MethodElicitationCreate, age, "c"},
		{mcp.MethodElicitationCreate, name, "a"},
		{mcp.MethodElicitationCreate, name, "b"},
		{mcp.MethodElicitationCreate, name, ""}, // both taken
		{mcp.MethodListRoots, nil, "r"},
		{mcp.MethodSamplingCreateMessage, mcp.CreateMessageParams{Messages: []mcp.SamplingMessage{}, MaxTokens: 5}, ""}, // too long
	} {
		key, size := InputKeyFrom(claimInputKey(ctx, tc.method, tc.params))
		if key != tc.want || size != 5 {
			t.Errorf("claim %s %v = %q of %d, want %q of 5", tc.method, tc.params, key, size, tc.want)
		}
	}

	other := withInputRound(context.Background())
	noteInputRound(other, []byte(`{"content":[{"type":"text","text":"input_required"}]}`))
	if key, size := InputKeyFrom(claimInputKey(other, mcp.MethodListRoots, nil)); key != "" || size != 0 {
		t.Errorf("a complete result recorded a round: %q of %d", key, size)
	}
	if key, _ := InputKeyFrom(claimInputKey(context.Background(), mcp.MethodListRoots, nil)); key != "" {
		t.Errorf("a ctx without a round gave key %q", key)
	}

	big := withInputRound(context.Background())
	var b strings.Builder
	b.WriteString(`{"resultType":"input_required","inputRequests":{`)
	for i := range maxRoundKeys + 1 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":{"method":"roots/list"}`, i)
	}
	b.WriteString(`}}`)
	noteInputRound(big, []byte(b.String()))
	if key, size := InputKeyFrom(claimInputKey(big, mcp.MethodListRoots, nil)); key != "" || size != 0 {
		t.Errorf("a round of %d questions gave key %q of %d, want none recorded", maxRoundKeys+1, key, size)
	}
}

// FuzzInputRound: whatever a server answers a call with, recording it as a
// round never panics, and a key claimed from it is one of the result's
// own keys, claimed once, and no longer than maxInputKeyBytes.
func FuzzInputRound(f *testing.F) {
	f.Add([]byte(`{"resultType":"input_required","inputRequests":{"a":{"method":"roots/list"},"b":{"method":"elicitation/create","params":{"message":"m"}}}}`))
	f.Add([]byte(`{"resultType":"input_required","inputRequests":{"":{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}}}`))
	f.Add([]byte(`{"resultType":"input_required","inputRequests":null}`))
	f.Add([]byte(`{"resultType":"input_required","inputRequests":{"x":{"method":"nope"}}}`))
	f.Fuzz(func(t *testing.T, result []byte) {
		ctx := withInputRound(context.Background())
		noteInputRound(ctx, result)
		var res struct {
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
		}
		_ = json.Unmarshal(result, &res)
		seen := map[string]bool{}
		for range 4 {
			for _, m := range []mcp.MCPMethod{mcp.MethodListRoots, mcp.MethodElicitationCreate, mcp.MethodSamplingCreateMessage} {
				key, _ := InputKeyFrom(claimInputKey(ctx, m, nil))
				if key == "" {
					continue
				}
				if _, ok := res.InputRequests[key]; !ok || seen[key] || len(key) > maxInputKeyBytes {
					t.Fatalf("claimed %q from %s (seen before: %v)", key, result, seen[key])
				}
				seen[key] = true
			}
		}
	})
}
