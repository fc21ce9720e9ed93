package persist

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
)

// TestReplayForm: the event log keeps a result event whole up to
// maxReplayResult; a larger one gets a replay form holding its leading
// objects, whole and byte for byte, and a note on how many were left out.
func TestReplayForm(t *testing.T) {
	result := func(n, size int) tools.Envelope {
		t.Helper()
		objects := make([]map[string]any, n)
		for i := range objects {
			objects[i] = map[string]any{tools.RefIDKey: fmt.Sprintf("mcp_todo_list_0_%d", i), "title": fmt.Sprintf("todo %d", i),
				"notes": strings.Repeat("n", size)}
		}
		p := tools.ResultPayload{Type: "table", Objects: objects, Metadata: map[string]any{"server": "todo", "tool": "list_todos"}}
		env, err := tools.NewEnvelope(tools.Event{Type: tools.EventResult, Payload: p}, "alice", "c1", "q1")
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	small, big := result(20, 3000), result(20, 10_000)
	evs, _, err := encodeEvents([]tools.Envelope{small, big})
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].Digest != nil {
		t.Errorf("a %d-byte result got a replay form; want it kept whole", len(evs[0].Envelope))
	}
	form := evs[1].Digest
	if form == nil || len(form) > maxReplayResult {
		t.Fatalf("a %d-byte result has a replay form of %d bytes, want one of at most %d", len(evs[1].Envelope), len(form), maxReplayResult)
	}
	var got, want struct {
		Payload struct {
			Objects  []json.RawMessage `json:"objects"`
			Metadata map[string]any    `json:"metadata"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(form, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(evs[1].Envelope, &want); err != nil {
		t.Fatal(err)
	}
	n := len(got.Payload.Objects) - 1
	if n < 10 || n >= 20 {
		t.Fatalf("the replay form keeps %d objects, want the 12 or so that fit", n)
	}
	for i := range n {
		if string(got.Payload.Objects[i]) != string(want.Payload.Objects[i]) {
			t.Errorf("object %d is not kept as it was streamed", i)
		}
	}
	if note := string(got.Payload.Objects[n]); !strings.Contains(note, fmt.Sprintf("%d of 20 objects left out", 20-n)) {
		t.Errorf("the note says %s", note)
	}
	if got.Payload.Metadata["server"] != "todo" {
		t.Errorf("metadata = %v, want it kept", got.Payload.Metadata)
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

// TestEncodedIsJSON: what persist hands the store as Encoded (so that the
// store does not scan it again) is JSON: events with their replay forms,
// and a turn's messages, results and digests.
func TestEncodedIsJSON(t *testing.T) {
	objects := make([]map[string]any, 30)
	for i := range objects {
		objects[i] = map[string]any{tools.RefIDKey: fmt.Sprintf("mcp_todo_list_0_%d", i), "notes": strings.Repeat("\u2028<\"n\">", 2000)}
	}
	big, err := tools.NewEnvelope(tools.Event{Type: tools.EventResult, Payload: tools.ResultPayload{Type: "table", Objects: objects}}, "alice", "c1", "q1")
	if err != nil {
		t.Fatal(err)
	}
	status, err := tools.NewEnvelope(tools.Event{Type: tools.EventStatus, Payload: tools.StatusPayload{Text: "a \"quoted\" <b>"}}, "alice", "c1", "q1")
	if err != nil {
		t.Fatal(err)
	}
	evs, _, err := encodeEvents([]tools.Envelope{status, big, {Type: tools.EventCompleted, ID: "com-1"}})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range evs {
		if !e.Encoded || !json.Valid(e.Envelope) || (e.Digest != nil && !json.Valid(e.Digest)) {
			t.Errorf("event %d: Encoded %v, envelope valid %v, digest %q", i, e.Encoded, json.Valid(e.Envelope), e.Digest)
		}
	}
	if evs[1].Digest == nil {
		t.Error("the large result has no replay form")
	}
	turn, err := newTurn("q1", []tree.Message{{Role: "user", Content: "add <milk>"}},
		map[string]map[string][]tools.EnvEntry{"mcp_todo": {"list": {{Objects: objects[:2]}}}})
	if err != nil {
		t.Fatal(err)
	}
	if !turn.Encoded || !json.Valid(turn.Messages) || !json.Valid(turn.Results) || !json.Valid(turn.Digests) {
		t.Errorf("turn: Encoded %v, messages %s, results valid %v, digests valid %v",
			turn.Encoded, turn.Messages, json.Valid(turn.Results), json.Valid(turn.Digests))
	}
}
