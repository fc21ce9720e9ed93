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
// new messages is keyed all the same. A client that reuses a query id
// has each of its queries saved: the key is the save's, not the query's.
func TestAppendRetried(t *testing.T) {
	p, _ := openStore(t)
	ctx := t.Context()
	events := func(qid string) []tools.Envelope {
		return []tools.Envelope{
			{Type: tools.EventText, ID: "tex-" + qid, UserID: "alice", ConversationID: "c1", QueryID: qid, Payload: json.RawMessage(`{"text":"Added."}`)},
			{Type: tools.EventCompleted, ID: "com-" + qid, UserID: "alice", ConversationID: "c1", QueryID: qid, Payload: json.RawMessage(`{}`)},
		}
	}
	ch := tree.ConversationChange{UserID: "alice", ConversationID: "c1", Title: "Milk", InitMode: tree.OneBranch, SaveKey: "k1",
		Messages: []tree.Message{{Role: "user", Content: "add milk"}, {Role: "assistant", Content: "Added."}}}
	for i, want := range []int64{1, 1} {
		v, err := p.Append(ctx, ch, events("q1"))
		if err != nil || v != want {
			t.Fatalf("Append %d of q1 = %d, %v; want version %d", i+1, v, err, want)
		}
	}
	// A query that added no message (it failed before its first step).
	quiet := tree.ConversationChange{UserID: "alice", ConversationID: "c1", Title: "Milk", InitMode: tree.OneBranch, SaveKey: "k2"}
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

	// The client asks again under q1: a new query, a new save.
	again := tree.ConversationChange{UserID: "alice", ConversationID: "c1", Title: "Milk", InitMode: tree.OneBranch, SaveKey: "k3",
		Messages: []tree.Message{{Role: "user", Content: "and eggs"}, {Role: "assistant", Content: "Added."}}}
	if v, err := p.Append(ctx, again, events("q1")); err != nil || v != 3 {
		t.Fatalf("Append of a second query under q1 = %d, %v; want version 3", v, err)
	}
	if st, _, _ := p.Load(ctx, "alice", "c1"); len(st.History) != 4 {
		t.Errorf("history after a second query under q1: %d messages, want 4: %v", len(st.History), st.History)
	}
}
