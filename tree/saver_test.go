package tree

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
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

// keyedStore is a StoreAppender that keys a query's save by its query, as
// persist does, and records the history messages it was given. With
// lateCommit set, the next query's save is written and then reported
// failed: a commit acknowledged too late, or a connection that broke after
// it.
type keyedStore struct {
	*memStore
	mu         sync.Mutex // guards the fields below
	queries    map[string]bool
	messages   []Message
	lateCommit bool
	down       bool
}

func (s *keyedStore) Append(_ context.Context, ch ConversationChange, events []tools.Envelope) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return 0, errors.New("database unavailable")
	}
	if len(events) > 0 {
		if q := events[0].QueryID; s.queries[q] {
			return int64(len(s.queries)), nil // saved already: written once
		}
		s.queries[events[0].QueryID] = true
	}
	s.messages = append(s.messages, ch.Messages...)
	if s.lateCommit && len(events) > 0 {
		s.lateCommit = false
		return 0, errors.New("commit acknowledged after the deadline")
	}
	return int64(len(s.queries)), nil
}

// TestFailedSaveThatWentThroughIsWrittenOnce: a query's save that failed
// after it had been written is sent again as it was, before the next
// query's, so that the Store writes each query's messages once; a save
// that did not go through is written by that retry.
func TestFailedSaveThatWentThroughIsWrittenOnce(t *testing.T) {
	for _, went := range []bool{true, false} {
		st := &keyedStore{memStore: newMemStore(), queries: map[string]bool{}, lateCommit: went, down: !went}
		m := NewManager(&Options{Store: st})
		answer := func(text string) *fakeModel {
			return script(step{call: "text_response", args: `{"text":"` + text + `"}`})
		}
		_ = m.Query(t.Context(), answer("one"), "alice", "c1", "q1", "first", nil) // its save fails
		st.mu.Lock()
		st.down = false
		st.mu.Unlock()
		if err := m.Query(t.Context(), answer("two"), "alice", "c1", "q2", "second", nil); err != nil {
			t.Fatalf("went through %v: the second query: %v", went, err)
		}
		st.mu.Lock()
		var texts []string
		for _, msg := range st.messages {
			texts = append(texts, msg.Content)
		}
		st.mu.Unlock()
		if want := []string{"first", "one", "second", "two"}; !slices.Equal(texts, want) {
			t.Errorf("went through %v: the Store was given messages %q, want each once: %q", went, texts, want)
		}
	}
}
