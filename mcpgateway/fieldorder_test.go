package mcpgateway

import (
	"slices"
	"testing"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

// TestFormKeepsTheServersFieldOrder: a server's form (over stdio or
// Streamable HTTP) reaches the Asker with its properties in the server's
// order, which mcp-go's map loses.
func TestFormKeepsTheServersFieldOrder(t *testing.T) {
	t.Parallel()
	for name, mk := range everythingCases(t, func(*mcpconfig.ServerConfig) {}) {
		t.Run(name, func(t *testing.T) { testFieldOrder(t, mk(t)) })
	}
}

func testFieldOrder(t *testing.T, cfg mcpconfig.ServerConfig) {
	t.Helper()
	g := newGateway(t, cfg, nil)
	u := &userStream{answer: func(tools.Question) tools.Answer { return tools.Answer{Action: tools.ElicitDecline} }}
	run(t, g, u, "trigger-elicitation-request", nil)
	if len(u.asked) != 1 {
		t.Fatalf("asked %d questions, want 1", len(u.asked))
	}
	q := u.asked[0].Payload
	want := []string{"name", "check", "firstLine", "email", "homepage", "birthdate", "integer", "number",
		"untitledSingleSelectEnum", "untitledMultipleSelectEnum", "titledSingleSelectEnum", "titledMultipleSelectEnum"}
	props, _ := q.RequestedSchema["properties"].(map[string]any)
	if len(q.FieldOrder) != len(props) || !slices.Equal(q.FieldOrder[:len(want)], want) {
		t.Errorf("field order = %v, want the server's, starting %v (%d properties)", q.FieldOrder, want, len(props))
	}
}
