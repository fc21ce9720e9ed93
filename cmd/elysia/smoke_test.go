package main

import (
	"net/http"
	"testing"
)

// TestServeShowsTheTodoGatewayOnTheTree is the first thing a user does:
// start the service and look at a conversation's tree.
func TestServeShowsTheTodoGatewayOnTheTree(t *testing.T) {
	s := startService(t, serveOptions{})
	code, body := do(t, http.MethodGet, s.URL+"/tree/alice/c1", "", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /tree: %d %v", code, body)
	}
	tree, _ := body["tree"].(map[string]any)
	opts, _ := tree["options"].(map[string]any)
	gw, ok := opts["mcp_todo"].(map[string]any)
	if !ok {
		t.Fatalf("root options lack mcp_todo: %v", opts)
	}
	if gw["name"] != "Mcp todo" || gw["branch"] != false {
		t.Fatalf("mcp_todo option = %v", gw)
	}
}
