package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/elysia-go/elysia/tree"
)

// historyServers is fakeServers with a history of todo that names whom
// it was asked for (Principal), one request per principal.
type historyServers struct{ fakeServers }

var _ ServerHistory = historyServers{}

func (historyServers) History(ctx context.Context, name string) (History, error) {
	if name != "todo" {
		return History{}, fmt.Errorf("server %q: %w", name, tree.ErrNotFound)
	}
	return History{Requests: []HistoryEntry{{Method: "tools/list", ID: "1", DurationMS: 1.5, Bytes: 2, Message: "{}", User: Principal(ctx)}}}, nil
}

// TestHistoryRoute: GET /api/servers/:name/history answers what the
// Servers gives for the key's principal, with empty lists as [], 404 for
// an unknown server, and 501 without the capability.
func TestHistoryRoute(t *testing.T) {
	h := newHarness(t, &Options{Keys: testKeys})
	h.srv = New(Deps{Trees: h.trees, Servers: historyServers{}}, &Options{Assets: testAssets, Keys: testKeys})
	rec := h.do(t, "GET", "/api/servers/todo/history", "", "Authorization", "Bearer key-alice")
	var body struct {
		Error   string         `json:"error"`
		History map[string]any `json:"history"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("GET history = %d %s (%v)", rec.Code, rec.Body, err)
	}
	reqs, _ := body.History["requests"].([]any)
	if len(reqs) != 1 || reqs[0].(map[string]any)["user"] != "alice" || reqs[0].(map[string]any)["duration_ms"] != 1.5 {
		t.Errorf("requests = %v; want the one asked for alice", body.History["requests"])
	}
	for _, k := range []string{"notifications", "stderr"} {
		if l, ok := body.History[k].([]any); !ok || len(l) != 0 {
			t.Errorf("%s = %v; want []", k, body.History[k])
		}
	}
	if rec := h.do(t, "GET", "/api/servers/todo/history", ""); rec.Code != http.StatusUnauthorized {
		t.Errorf("without a key: %d, want 401", rec.Code)
	}
	if rec := h.do(t, "GET", "/api/servers/nope/history", "", "Authorization", "Bearer key-admin"); rec.Code != http.StatusNotFound {
		t.Errorf("unknown server: %d %s, want 404", rec.Code, rec.Body)
	}
	plain := newHarness(t, nil)
	if rec := plain.do(t, "GET", "/api/servers/todo/history", ""); rec.Code != http.StatusNotImplemented {
		t.Errorf("without ServerHistory: %d, want 501", rec.Code)
	}
}
