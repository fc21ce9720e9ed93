package mcpgateway

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// toolsSeen is an Observer that counts ObserveTools calls.
type toolsSeen struct {
	mu   sync.Mutex
	seen []string
}

func (o *toolsSeen) ObserveCall(string, string, string, time.Duration) {}
func (o *toolsSeen) ObserveCircuit(string, string)                     {}
func (o *toolsSeen) ObserveTools(server string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen = append(o.seen, server)
}

func (o *toolsSeen) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.seen)
}

// TestListKeepsAnnotationsAndTellsOfNewTools: a listing keeps each tool's
// annotations as the server sent them, and a ToolsObserver hears of the
// first listing and of one that brings another tool, not of a repeat.
func TestListKeepsAnnotationsAndTellsOfNewTools(t *testing.T) {
	f := newFakeServer(t)
	f.srv.AddTool(mcp.NewTool("ro", mcp.WithReadOnlyHintAnnotation(true), mcp.WithTitleAnnotation("Read only")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
	obs := &toolsSeen{}
	g := newGateway(t, f.config("fake"), &Options{Observer: obs})
	infos, err := g.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(infos, func(ti ToolInfo) bool { return ti.Name == "ro" })
	if i < 0 {
		t.Fatalf("no tool ro in %v", toolNames(infos))
	}
	var ann map[string]any
	if err := json.Unmarshal(infos[i].Annotations, &ann); err != nil || ann["readOnlyHint"] != true || ann["title"] != "Read only" {
		t.Errorf("annotations %s, want readOnlyHint and title", infos[i].Annotations)
	}
	if obs.count() != 1 {
		t.Errorf("ObserveTools after the first listing: %d calls, want 1", obs.count())
	}
	f.srv.AddTool(mcp.NewTool("later"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	})
	deadline := time.Now().Add(10 * time.Second)
	for obs.count() < 2 && time.Now().Before(deadline) {
		if _, err := g.List(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond) // polling the observer, bounded by the deadline
	}
	if obs.count() != 2 {
		t.Errorf("ObserveTools after a new tool: %d calls, want 2", obs.count())
	}
}
