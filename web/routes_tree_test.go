package web

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTreeWithoutCreate: GET /tree?create=false answers a new
// conversation's tree without creating it, so that a page that was only
// opened leaves no empty conversation behind; without it GET /tree creates
// the conversation, as Elysia's does.
func TestTreeWithoutCreate(t *testing.T) {
	h := newHarness(t, nil)
	listed := func() string {
		t.Helper()
		rec := h.do(t, "GET", "/conversations/alice", "")
		var body struct {
			Conversations []struct {
				ID string `json:"conversation_id"`
			} `json:"conversations"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("list: %v: %s", err, rec.Body)
		}
		ids := ","
		for _, c := range body.Conversations {
			ids += c.ID + ","
		}
		return ids
	}
	rec := h.do(t, "GET", "/tree/alice/peeked?create=false", "")
	if rec.Code != 200 || !strings.HasPrefix(rec.Body.String(), `{"conversation_id":"peeked","exists":false,"error":"","tree":{`) || !strings.Contains(rec.Body.String(), `"mcp_todo"`) {
		t.Fatalf("GET /tree?create=false = %d %s, want the default tree", rec.Code, rec.Body)
	}
	if got := listed(); strings.Contains(got, ",peeked,") {
		t.Errorf("after GET /tree?create=false alice has %q, want no peeked", got)
	}
	if rec := h.do(t, "GET", "/conversations/alice/peeked", ""); rec.Code != 404 {
		t.Errorf("GET /conversations of the peeked one = %d, want 404", rec.Code)
	}
	if rec := h.do(t, "GET", "/tree/alice/made", ""); rec.Code != 200 {
		t.Fatalf("GET /tree = %d %s", rec.Code, rec.Body)
	}
	if got := listed(); !strings.Contains(got, ",made,") {
		t.Errorf("after GET /tree alice has %q, want made", got)
	}
	if rec := h.do(t, "GET", "/tree/alice/made?create=false", ""); !strings.Contains(rec.Body.String(), `"exists":true`) {
		t.Errorf("GET /tree?create=false of an existing conversation = %s, want exists true", rec.Body)
	}
}
