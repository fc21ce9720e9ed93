package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/tools"
)

// TestPrintToolListing: a gateway's tool list prints as one line saying
// how many tools of which server, not the tools' JSON.
func TestPrintToolListing(t *testing.T) {
	objs := []map[string]any{}
	for _, n := range []string{"echo", "add", "sleep"} {
		objs = append(objs, map[string]any{"name": n, "inputs": map[string]any{"type": "object"}, "_REF_ID": "mcp_everything_list_0_" + n})
	}
	payload, err := json.Marshal(map[string]any{"type": "table", "objects": objs,
		"metadata": map[string]any{"server": "everything", "action": "list"}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	p := &eventPrinter{w: &out}
	p.print(tools.Envelope{Type: tools.EventResult, Payload: payload})
	if got, want := out.String(), "▦ listed 3 tools of everything\n"; got != want {
		t.Errorf("printed %q; want %q", got, want)
	}
	if strings.Contains(out.String(), "_REF_ID") {
		t.Error("the listing prints reference ids")
	}
}
