package session

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

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
