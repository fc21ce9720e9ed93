package mcpgateway

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestParseExpose: the top-level "expose" block and a server's "prefix",
// with their defaults, and a config error at the position of each bad value.
func TestParseExpose(t *testing.T) {
	cfg := parseOK(t, `{"servers": {"x": {"command": "c"}}}`, nil)
	if diff := cmp.Diff(DefaultExpose(), cfg.Expose); diff != "" {
		t.Errorf("default expose (-want +got):\n%s", diff)
	}
	if got := cfg.Servers[0].ExposedPrefix(); got != "x" {
		t.Errorf("ExposedPrefix without prefix = %q, want the name", got)
	}
	cfg = parseOK(t, `{"expose": {"mode": "search", "max_tools": 40, "agent": false, "separator": "-"},
		"servers": {"x": {"command": "c", "prefix": ""}, "y": {"command": "c", "prefix": "why"}}}`, nil)
	want := Expose{Mode: ExposeSearch, MaxTools: 40, Agent: false, Separator: "-"}
	if diff := cmp.Diff(want, cfg.Expose); diff != "" {
		t.Errorf("expose (-want +got):\n%s", diff)
	}
	if x, y := cfg.Servers[0].ExposedPrefix(), cfg.Servers[1].ExposedPrefix(); x != "" || y != "why" {
		t.Errorf("prefixes %q, %q; want \"\" and \"why\"", x, y)
	}
	if cfg.Servers[0].Equal(parseOK(t, `{"servers": {"x": {"command": "c"}}}`, nil).Servers[0]) {
		t.Error("a server whose prefix changed is Equal to the old one: its gateway would not be replaced")
	}

	for _, tt := range []struct{ src, want string }{
		{`{"expose": {"mode": "all"}, "servers": {}}`,
			`mcp.json:1:21: expose.mode "all" unknown (want auto, tools, gateways or search)`},
		{`{"expose": {"max_tools": 0}, "servers": {}}`,
			`mcp.json:1:26: expose.max_tools must be a whole number from 1 to 10000`},
		{`{"expose": {"separator": "::"}, "servers": {}}`,
			`mcp.json:1:26: expose.separator "::" must be 1 to 8 characters from [A-Za-z0-9_-]`},
		{`{"expose": [], "servers": {}}`,
			`mcp.json:1:12: expose must be an object, got an array`},
		{`{"servers": {"x": {"command": "c", "prefix": "a b"}}}`,
			`mcp.json:1:46: server "x": prefix "a b" must be at most 32 characters from [A-Za-z0-9_-]`},
	} {
		_, err := Parse("mcp.json", []byte(tt.src), &LoadOptions{LookupEnv: envMap(nil), BaseDir: "/base"})
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%s) = %v\nwant %s", tt.src, err, tt.want)
		}
	}
	cfg = parseOK(t, `{"expose": {"modes": "x"}, "servers": {}}`, nil)
	if diff := cmp.Diff([]string{`mcp.json:1:13: unknown key "modes" in expose ignored (want mode, max_tools, agent or separator)`}, cfg.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

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
