package persist

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
)

// TestEventDigestFromPayload: the digest of a large result event made from
// its payload before encoding (what a query's save passes) is the one made
// by decoding the envelope (what a save without it does).
func TestEventDigestFromPayload(t *testing.T) {
	objects := make([]map[string]any, 20)
	for i := range objects {
		objects[i] = map[string]any{tools.RefIDKey: fmt.Sprintf("mcp_todo_list_0_%d", i),
			"id": i + 1, "title": fmt.Sprintf("todo number %d", i), "done": i%2 == 0, "tags": []any{"a", "b"}}
	}
	p := tools.ResultPayload{Type: "table", Objects: objects, Metadata: map[string]any{"server": "todo", "tool": "list_todos"}}
	res, err := tools.NewEnvelope(tools.Event{Type: tools.EventResult, Payload: p}, "alice", "c1", "q1")
	if err != nil {
		t.Fatal(err)
	}
	done, err := tools.NewEnvelope(tools.Event{Type: tools.EventCompleted}, "alice", "c1", "q1")
	if err != nil {
		t.Fatal(err)
	}
	events := []tools.Envelope{res, done}

	decoded, _, err := encodeEvents(events, nil)
	if err != nil {
		t.Fatal(err)
	}
	given, _, err := encodeEvents(events, map[string]tools.ResultPayload{res.ID: p})
	if err != nil {
		t.Fatal(err)
	}
	if decoded[0].Digest == nil || len(decoded[0].Digest) >= len(decoded[0].Envelope) {
		t.Fatalf("digest of a %d-byte result = %s; want a shorter one", len(decoded[0].Envelope), decoded[0].Digest)
	}
	for i := range events {
		if string(given[i].Envelope) != string(decoded[i].Envelope) || string(given[i].Digest) != string(decoded[i].Digest) {
			t.Errorf("event %d from its payload:\n%s\n%s\nwant as decoded:\n%s\n%s", i,
				given[i].Envelope, given[i].Digest, decoded[i].Envelope, decoded[i].Digest)
		}
	}
}

// TestEncodeAsMarshal: envelopes and results are encoded byte for byte as
// tools.Marshal encodes them, though written without compacting their
// parts again.
func TestEncodeAsMarshal(t *testing.T) {
	p := tools.ResultPayload{Type: "table", Metadata: map[string]any{"server": "<todo> & co"}, Objects: []map[string]any{
		{tools.RefIDKey: "t_l_0_0", "title": "milk \u2028 <b>\"2%\"</b>\n", "n": 1.5}}}
	env, err := tools.NewEnvelope(tools.Event{Type: tools.EventResult, Payload: p}, "al\"ice", "c<1>", "q1")
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []tools.Envelope{env, {Type: tools.EventCompleted, ID: "com-1"}} {
		got, err := encodeEnvelope(ev)
		if err != nil {
			t.Fatal(err)
		}
		want, err := tools.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("encodeEnvelope =\n%s\nwant\n%s", got, want)
		}
	}

	results := map[string]map[string][]tools.EnvEntry{
		"mcp_todo": {
			"list": {{Objects: p.Objects, Metadata: p.Metadata}, {Objects: make([]map[string]any, 0), Metadata: map[string]any{}}},
			"a<b>": {{Objects: []map[string]any{{"x": strings.Repeat("long ", 100)}, {"x": 2}}}},
		},
		"text_response": {"text": {{Objects: []map[string]any{{"text": "hi"}}}}},
		"empty":         {},
	}
	whole, digests, err := encodeResults(results)
	if err != nil {
		t.Fatal(err)
	}
	w := map[string]map[string][]json.RawMessage{}
	d := map[string]map[string][]json.RawMessage{}
	for tool, byName := range results {
		w[tool], d[tool] = map[string][]json.RawMessage{}, map[string][]json.RawMessage{}
		for name, list := range byName {
			for _, e := range list {
				enc, _ := tools.Marshal(e)
				dg := enc
				if short := tree.DigestEntry(e); len(short) < len(enc) {
					dg = short
				}
				w[tool][name] = append(w[tool][name], enc)
				d[tool][name] = append(d[tool][name], dg)
			}
		}
	}
	wantWhole, _ := tools.Marshal(w)
	wantDigests, _ := tools.Marshal(d)
	if string(whole) != string(wantWhole) || string(digests) != string(wantDigests) {
		t.Errorf("encodeResults =\n%s\n%s\nwant\n%s\n%s", whole, digests, wantWhole, wantDigests)
	}
}
