package tree

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/elysia-go/elysia/tools"
)

// appendStore is a goroutine-safe StoreAppender that records the result
// payloads each Append is given; it stores nothing.
type appendStore struct {
	*memStore
	mu       sync.Mutex // guards payloads and events
	payloads []map[string]tools.ResultPayload
	events   [][]tools.Envelope
}

var _ StoreAppender = (*appendStore)(nil)

func (s *appendStore) Append(_ context.Context, ch ConversationChange, events []tools.Envelope) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.payloads = append(s.payloads, ch.ResultPayloads)
	s.events = append(s.events, events)
	return int64(len(s.events)), nil
}

// TestSaveGivesResultPayloads: a query's save gives the Store the payload
// of each result event it saves, as it was before it was encoded, so that
// the Store can make a digest without decoding the envelope.
func TestSaveGivesResultPayloads(t *testing.T) {
	st := &appendStore{memStore: newMemStore()}
	m := NewManager(&Options{Store: st})
	m.SetTools([]Placement{{Tool: gateway("todo")}})
	model := script(
		step{call: "mcp_todo", args: `{"action":"list"}`},
		step{call: "text_response", args: `{"text":"done"}`},
	)
	if err := m.Query(t.Context(), model, "alice", "c1", "q1", "list the tools", nil); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.events) != 1 {
		t.Fatalf("%d saves; want the query's only", len(st.events))
	}
	var results int
	for _, ev := range st.events[0] {
		if ev.Type != tools.EventResult {
			continue
		}
		results++
		p, ok := st.payloads[0][ev.ID]
		if !ok {
			t.Errorf("result event %s has no payload", ev.ID)
			continue
		}
		var fromEnvelope, fromPayload any
		b, err := tools.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(ev.Payload, &fromEnvelope); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &fromPayload); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(fromEnvelope, fromPayload); diff != "" {
			t.Errorf("payload of %s differs from its envelope's (-envelope +payload):\n%s", ev.ID, diff)
		}
	}
	if results != 1 || len(st.payloads[0]) != results {
		t.Errorf("%d result events, %d payloads; want 1 and 1", results, len(st.payloads[0]))
	}
}
