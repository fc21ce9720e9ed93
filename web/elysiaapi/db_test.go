package elysiaapi

import (
	"encoding/json"
	"testing"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/web/internal/webtest"
)

// TestLoadTreeSendsCompactCatalogue: a reopened conversation shows a
// server's tool list in Elysia's frontend as it showed live, a table of
// names and one-line descriptions; every other event comes back as it was
// saved, and the service's own route keeps the full listing.
func TestLoadTreeSendsCompactCatalogue(t *testing.T) {
	h := newHarness(t, nil)
	rec := h.do(t, "GET", "/db/alice/load_tree/c1", "")
	var loaded struct {
		Rebuild []tools.Envelope `json:"rebuild"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &loaded); err != nil || rec.Code != 200 {
		t.Fatalf("load_tree: %d %v: %s", rec.Code, err, rec.Body)
	}
	saved := webtest.AppendixEnvelopes("alice", "c1", "q1")
	if len(loaded.Rebuild) != len(saved)+1 {
		t.Fatalf("rebuild has %d messages, want the user_prompt and %d events: %s", len(loaded.Rebuild), len(saved), rec.Body)
	}
	for i, want := range saved {
		got := loaded.Rebuild[i+1]
		if want.Type == tools.EventResult {
			want.Payload = json.RawMessage(`{"type":"table","objects":[{"name":"create_todo","description":"..."}],"metadata":{"server":"todo","action":"list"}}`)
		}
		if got.Type != want.Type || got.ID != want.ID || string(got.Payload) != string(want.Payload) {
			t.Errorf("rebuild[%d] = %s %s %s, want %s %s %s", i+1, got.Type, got.ID, got.Payload, want.Type, want.ID, want.Payload)
		}
	}

	var conv struct {
		Conversation struct {
			Events []tools.Envelope `json:"events"`
		} `json:"conversation"`
	}
	rec = h.do(t, "GET", "/conversations/alice/c1", "")
	if err := json.Unmarshal(rec.Body.Bytes(), &conv); err != nil || len(conv.Conversation.Events) != len(saved) {
		t.Fatalf("/conversations/alice/c1: %v: %s", err, rec.Body)
	}
	if got, want := string(conv.Conversation.Events[1].Payload), string(saved[1].Payload); got != want {
		t.Errorf("the service's own route changed the list result:\n%s\nwant:\n%s", got, want)
	}
}
