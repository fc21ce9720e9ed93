package tools

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// An entry is encoded once, when it is added; what the result event, the
// prompt and the save get must still be what Marshal writes.
func TestEntryJSONIsMarshal(t *testing.T) {
	var env Environment
	cases := []struct {
		objects  []map[string]any
		metadata map[string]any
	}{
		{[]map[string]any{{"title": "a<b & c>d", "n": 1.5, "tags": []any{"x", nil}}}, map[string]any{"server": "todo"}},
		{[]map[string]any{{"text": "é \u2028 \"q\" \\"}, {"nested": map[string]any{"metadata": 1, "objects": []any{}}}}, nil},
		{[]map[string]any{{}}, map[string]any{"x": map[string]any{"y": true}}},
	}
	for i, c := range cases {
		entry := env.Add("mcp_todo", "list", c.objects, c.metadata)
		got := checkEntryJSON(t, entry)
		if cap(got) != len(got) {
			t.Errorf("case %d: JSON has spare capacity %d: an append would write into the shared encoding", i, cap(got)-len(got))
		}

		ev, err := NewEnvelope(Event{Type: EventResult, Payload: entry.ResultPayload("table")}, "u", "c", "q")
		if err != nil {
			t.Fatal(err)
		}
		wantPayload, err := Marshal(ResultPayload{Type: "table", Objects: entry.Objects, Metadata: entry.Metadata})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ev.Payload, wantPayload) {
			t.Errorf("case %d: result payload =\n%s\nwant\n%s", i, ev.Payload, wantPayload)
		}
	}
}

// A result that does not marshal is refused where it is used, as before
// the encoding was cached, not when it is added.
func TestEntryThatDoesNotMarshal(t *testing.T) {
	var env Environment
	entry := env.Add("t", "r", []map[string]any{{"x": math.NaN()}}, nil)
	if _, err := entry.JSON(); err == nil {
		t.Error("JSON of a NaN: no error")
	}
	if _, err := NewEnvelope(Event{Type: EventResult, Payload: entry.ResultPayload("table")}, "u", "c", "q"); err == nil {
		t.Error("NewEnvelope of a NaN: no error")
	}
	if !env.Has("t", "r") {
		t.Error("the entry was not added")
	}
}

// Objects the caller has encoded are not encoded again: the tag goes in
// front of their JSON when Marshal would put it first, and the result is
// still what Marshal writes.
func TestAddEncoded(t *testing.T) {
	var env Environment
	objects := []map[string]any{
		{"name": "create_todo", "inputs": json.RawMessage(`{"type": "object"}`)}, // every key after _REF_ID
		{"$schema": "x", "name": "b"},                                            // "$schema" sorts before _REF_ID
		{},
		{"ZED": 1}, // so does an upper-case key
	}
	encoded := make([]json.RawMessage, len(objects))
	for i, o := range objects {
		b, err := Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		encoded[i] = b
	}
	checkEntryJSON(t, env.AddEncoded("mcp_todo", "list", objects, encoded, map[string]any{"action": "list"}))

	// The encoding is what is used: a caller that breaks the contract
	// shows.
	entry := env.AddEncoded("t", "r", []map[string]any{{"a": 1}}, []json.RawMessage{json.RawMessage(`{"a":2}`)}, nil)
	if got, _ := entry.JSON(); !bytes.Contains(got, []byte(`"a":2`)) {
		t.Errorf("JSON = %s, want the given encoding reused", got)
	}
	// An encoding per object or none.
	entry = env.AddEncoded("t", "r", []map[string]any{{"a": 1}, {"a": 3}}, []json.RawMessage{json.RawMessage(`{"a":2}`)}, nil)
	if got, _ := entry.JSON(); bytes.Contains(got, []byte(`"a":2`)) {
		t.Errorf("JSON = %s: an encoded of the wrong length was used", got)
	}
}

// checkEntryJSON checks that entry's JSON is what Marshal writes for it,
// and returns it.
func checkEntryJSON(t *testing.T, entry EnvEntry) []byte {
	t.Helper()
	got, err := entry.JSON()
	if err != nil {
		t.Fatal(err)
	}
	want, err := Marshal(EnvEntry{Objects: entry.Objects, Metadata: entry.Metadata})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("JSON =\n%s\nwant\n%s", got, want)
	}
	return got
}

// DropJSON lets entries go back to being encoded on demand: the same
// bytes, no longer kept.
func TestDropJSON(t *testing.T) {
	var env Environment
	env.Add("t", "r", []map[string]any{{"a": 1}}, nil)
	env.Add("t", "r", []map[string]any{{"a": 2}}, nil)
	kept := func() bool {
		e := env.Snapshot()["t"]["r"][1]
		a, _ := e.JSON()
		b, _ := e.JSON()
		return &a[0] == &b[0]
	}
	if !kept() {
		t.Fatal("Add kept no JSON")
	}
	env.DropJSON("t", "r")
	if kept() {
		t.Error("JSON still kept after DropJSON")
	}
	for _, e := range env.Snapshot()["t"]["r"] {
		checkEntryJSON(t, e)
	}
}

// TestSince: Since gives the entries added after those seen, list by list,
// copied; lists with nothing newer are left out.
func TestSince(t *testing.T) {
	var env Environment
	if got := env.Since(func(string, string) int { return 0 }); got != nil {
		t.Errorf("Since of an empty environment = %v, want nil", got)
	}
	for i := range 3 {
		env.Add("mcp_todo", "create", []map[string]any{{"n": i}}, nil)
	}
	env.Add("mcp_todo", "list", []map[string]any{{"n": 9}}, nil)
	env.Add("base", "query", []map[string]any{{"q": 1}}, nil)
	seen := map[string]int{"mcp_todo/create": 1, "mcp_todo/list": 1, "base/query": 2}
	got := env.Since(func(tool, name string) int { return seen[tool+"/"+name] })
	if len(got) != 1 || len(got["mcp_todo"]) != 1 {
		t.Fatalf("Since = %v, want only mcp_todo/create", got)
	}
	added := got["mcp_todo"]["create"]
	if len(added) != 2 || added[0].Objects[0]["n"] != 1 || added[1].Objects[0]["n"] != 2 {
		t.Fatalf("Since(mcp_todo/create after 1) = %v, want entries 1 and 2", added)
	}
	added[0] = EnvEntry{} // a copy: the environment keeps its own
	if all := env.Snapshot()["mcp_todo"]["create"]; all[1].Objects[0]["n"] != 1 {
		t.Errorf("changing what Since returned changed the environment: %v", all[1])
	}
}
