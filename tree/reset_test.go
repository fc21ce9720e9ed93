package tree

import (
	"testing"

	"github.com/elysia-go/elysia/tools"
)

// TestTreeUpdateReset checks reset as Elysia computes it (next is None and
// not completed): a tool that leaves the pass unfinished resets, and the
// decision that ends the query does not, so Elysia's frontend draws no new
// pass under the answer.
func TestTreeUpdateReset(t *testing.T) {
	_, c := newTestManager(t, nil)
	model := script(
		step{call: "mcp_todo", args: `{"action":"list"}`},
		step{call: "text_response", args: `{"text":"Done."}`},
	)
	var rec recorder
	if err := c.Run(t.Context(), model, "list my todos", "q1", rec.emit); err != nil {
		t.Fatal(err)
	}
	tus := rec.payloads(tools.EventTreeUpdate)
	if len(tus) != 2 {
		t.Fatalf("tree updates = %v, want 2", tus)
	}
	for i, want := range []bool{true, false} {
		if tus[i]["reset"] != want {
			t.Errorf("tree_update %d (%v) reset = %v, want %v", i, tus[i]["decision"], tus[i]["reset"], want)
		}
	}
}
