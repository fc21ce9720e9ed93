package persist

import (
	"fmt"
	"testing"

	"github.com/elysia-go/elysia/tools"
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
