package mcpgateway

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

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

// TestLineSniffer: the output passes unchanged however it is split; lines
// are handed over whole; a line over maxSniffLine is not.
func TestLineSniffer(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", maxSniffLine+1)
	in := "one\n" + long + "\n\ntwo" + "\nthree\n"
	var got []string
	s := &lineSniffer{r: iotest.OneByteReader(strings.NewReader(in)), line: func(b []byte) { got = append(got, string(b)) }}
	var out bytes.Buffer
	if _, err := io.Copy(&out, s); err != nil {
		t.Fatal(err)
	}
	if out.String() != in {
		t.Errorf("the output changed")
	}
	if want := []string{"one", "two", "three"}; !slices.Equal(got, want) {
		t.Errorf("lines = %.40q, want %q", got, want)
	}
}

// TestFieldOrdersTake: an order is matched by its names, newest first,
// used once, and at most maxFieldOrders are kept.
func TestFieldOrdersTake(t *testing.T) {
	t.Parallel()
	var o fieldOrders
	o.line([]byte(`{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"requestedSchema":{"type":"object","properties":{"b":{},"a":{}}}}}`))
	o.line([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"properties":{"x":{}}}}`))
	schema := map[string]any{"properties": map[string]any{"a": map[string]any{}, "b": map[string]any{}}}
	if got := o.take(schema); !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("take = %v, want [b a]", got)
	}
	if got := o.take(schema); got != nil {
		t.Errorf("second take = %v, want nil", got)
	}
	for range maxFieldOrders + 3 {
		o.line([]byte(`{"method":"elicitation/create","params":{"requestedSchema":{"properties":{"z":{}}}}}`))
	}
	if len(o.recent) != maxFieldOrders {
		t.Errorf("kept %d orders, want %d", len(o.recent), maxFieldOrders)
	}
}
