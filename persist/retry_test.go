package persist_test

import (
	"encoding/json"
	"testing"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
)

// TestAppendRetried appends a query's change twice, as a caller does that
// retries a save it was told had failed though its commit went through:
// the conversation holds the query's messages and events once, and the
// retry reports the version the first save left. A query's save without
// new messages is keyed all the same.
func TestAppendRetried(t *testing.T) {
	p, _ := openStore(t)
	ctx := t.Context()
	events := func(qid string) []tools.Envelope {
		return []tools.Envelope{
			{Type: tools.EventText, ID: "tex-" + qid, UserID: "alice", ConversationID: "c1", QueryID: qid, Payload: json.RawMessage(`{"text":"Added."}`)},
			{Type: tools.EventCompleted, ID: "com-" + qid, UserID: "alice", ConversationID: "c1", QueryID: qid, Payload: json.RawMessage(`{}`)},
		}
	}
	ch := tree.ConversationChange{UserID: "alice", ConversationID: "c1", Title: "Milk", InitMode: tree.OneBranch,
		Messages: []tree.Message{{Role: "user", Content: "add milk"}, {Role: "assistant", Content: "Added."}}}
	for i, want := range []int64{1, 1} {
		v, err := p.Append(ctx, ch, events("q1"))
		if err != nil || v != want {
			t.Fatalf("Append %d of q1 = %d, %v; want version %d", i+1, v, err, want)
		}
	}
	// A query that added no message (it failed before its first step).
	quiet := tree.ConversationChange{UserID: "alice", ConversationID: "c1", Title: "Milk", InitMode: tree.OneBranch}
	for i, want := range []int64{2, 2} {
		v, err := p.Append(ctx, quiet, events("q2"))
		if err != nil || v != want {
			t.Fatalf("Append %d of q2 = %d, %v; want version %d", i+1, v, err, want)
		}
	}

	st, ok, err := p.Load(ctx, "alice", "c1")
	if err != nil || !ok {
		t.Fatalf("Load = %v, %v", ok, err)
	}
	if len(st.History) != 2 {
		t.Errorf("history after q1 saved twice: %d messages, want 2: %v", len(st.History), st.History)
	}
	evs, err := p.Events(ctx, "alice", "c1")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 4 {
		t.Errorf("%d events after q1 and q2 saved twice each, want 4", len(evs))
	}
}
