package persist_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/elysia-go/elysia/persist"
	"github.com/elysia-go/elysia/store"
	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
)

// rowsTool returns a table of five todos named after the query's number,
// each some 300 bytes: a result the UI shows as a table, large enough for
// the prompt to fold once a later query makes it old.
type rowsTool struct{}

var _ tools.Tool = rowsTool{}

func (rowsTool) Name() string          { return "big_data" }
func (rowsTool) Description() string   { return "Returns data." }
func (rowsTool) EndsRun() bool         { return false }
func (rowsTool) Inputs() []tools.Input { return nil }

func (rowsTool) Run(_ context.Context, call tools.Call, _ tools.Emitter) (tools.Result, error) {
	objs := make([]map[string]any, 5)
	for i := range objs {
		objs[i] = map[string]any{"title": fmt.Sprintf("%s, row %d", call.Query, i), "notes": strings.Repeat("n", 300), "priority": i + 1}
	}
	return tools.Result{Objects: objs, Metadata: map[string]any{"server": "big", "action": "execute"}}, nil
}

// TestReopenedConversationReplaysResults runs three queries that each show
// a table, then reopens the conversation from the same SQLite file with a
// fresh store and Manager: the event log replayed to the UI holds every
// result as it was streamed, objects and all, while the environment the
// decision prompt sees still folds the older results to their digests.
func TestReopenedConversationReplaysResults(t *testing.T) {
	t.Parallel()
	p, s, path := openFile(t)
	ctx := t.Context()
	model := &scripted{}
	m := tree.NewManager(&tree.Options{Store: p, Locker: s})
	m.SetTools([]tree.Placement{{Tool: rowsTool{}}})
	streamed := map[string]json.RawMessage{} // result events by envelope id
	for i := range 3 {
		q := fmt.Sprintf("query %d", i)
		if err := m.Query(ctx, model, "alice", "c1", fmt.Sprintf("q%d", i), q, func(env tools.Envelope) {
			if env.Type == tools.EventResult {
				streamed[env.ID] = env.Payload
			}
		}); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if len(streamed) != 3 {
		t.Fatalf("%d result events streamed, want 3", len(streamed))
	}

	s2, err := store.Open(ctx, "file:"+filepath.ToSlash(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s2.Close() })
	p2 := persist.New(s2)
	m2 := tree.NewManager(&tree.Options{Store: p2, Locker: s2})
	m2.SetTools([]tree.Placement{{Tool: rowsTool{}}})
	c, ok, err := m2.Reopen(ctx, "alice", "c1")
	if err != nil || !ok {
		t.Fatalf("Reopen = %v, %v", ok, err)
	}
	evs, err := p2.Events(ctx, "alice", "c1")
	if err != nil {
		t.Fatal(err)
	}
	replayed := 0
	for _, raw := range evs {
		var env struct {
			Type    string          `json:"type"`
			ID      string          `json:"id"`
			Payload json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal(raw, &env); err != nil {
			t.Fatal(err)
		}
		if env.Type != string(tools.EventResult) {
			continue
		}
		replayed++
		want, ok := streamed[env.ID]
		if !ok {
			t.Errorf("replayed result %s was never streamed", env.ID)
			continue
		}
		if diff := cmp.Diff(decode(t, want), decode(t, env.Payload)); diff != "" {
			t.Errorf("result %s replayed differs from what was streamed (-streamed +replayed):\n%s", env.ID, diff)
		}
	}
	if replayed != 3 {
		t.Errorf("%d result events replayed, want 3", replayed)
	}

	// The prompt's view still folds: the first query's result is a digest.
	list := c.State().Environment["big_data"]["big_data"]
	if len(list) != 3 {
		t.Fatalf("%d results in the environment, want 3", len(list))
	}
	if _, whole := list[0].Objects[0]["notes"]; whole {
		t.Error("the oldest result came back whole in the environment; want the prompt's digest")
	}
}

func decode(t *testing.T, b json.RawMessage) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}
