package tree

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/tools"
)

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	testenv.Golden(t, filepath.Join("testdata", name), got)
}

func indentJSON(t *testing.T, tr *Tree) []byte {
	t.Helper()
	raw, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		t.Fatalf("tree JSON is invalid: %v\n%s", err, raw)
	}
	b.WriteByte('\n')
	return b.Bytes()
}

func testTree(t *testing.T, mode InitMode) *Tree {
	t.Helper()
	m := NewManager(nil)
	m.SetTools([]Placement{{Tool: gateway("todo")}, {Tool: gateway("everything")}})
	tr, err := m.DefaultTree(mode)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestTreeJSONGolden(t *testing.T) {
	for _, mode := range []InitMode{OneBranch, MultiBranch, Empty} {
		t.Run(string(mode), func(t *testing.T) {
			golden(t, string(mode)+".json.golden", indentJSON(t, testTree(t, mode)))
		})
	}
	t.Run("chained", func(t *testing.T) {
		tr := testTree(t, OneBranch).Clone()
		if err := tr.AddTool(gateway("summarize"), "base", []string{"mcp_todo"}, false); err != nil {
			t.Fatal(err)
		}
		if err := tr.AddBranch("search", "Search things", "", "", true); err != nil {
			t.Fatal(err)
		}
		if err := tr.AddTool(gateway("query"), "search", nil, false); err != nil {
			t.Fatal(err)
		}
		golden(t, "chained.json.golden", indentJSON(t, tr))
		golden(t, "chained.txt.golden", []byte(tr.Text()))
	})
}

func TestTreeJSONAppendixShape(t *testing.T) {
	m := NewManager(nil)
	m.SetTools([]Placement{{Tool: gateway("todo")}})
	tr, _ := m.DefaultTree("")
	raw, _ := json.Marshal(tr)
	want := `"mcp_todo":{"name":"Mcp todo","id":"mcp_todo","description":"MCP server 'todo' (stdio) - provides access to multiple tools","instruction":"","reasoning":"","branch":false,"options":{}}`
	if !strings.Contains(string(raw), want) {
		t.Errorf("tree JSON lacks %s:\n%s", want, raw)
	}
	prefix := `{"name":"Base","id":"base","description":"","instruction":"Choose a base-level task based on the user's prompt and available information. Decide based on the tools you have available as well as their descriptions. Read them thoroughly and match the actions to the user prompt.","reasoning":"","branch":true,"options":{"text_response":`
	if !strings.HasPrefix(string(raw), prefix) {
		t.Errorf("tree JSON starts with %.300s", raw)
	}
}

func TestDisplayName(t *testing.T) {
	for in, want := range map[string]string{
		"mcp_todo": "Mcp todo", "text_response": "Text response", "base.query": "Base.query",
		"MCP_API": "Mcp api", "": "", "élan_vital": "Élan vital",
	} {
		if got := displayName(in); got != want {
			t.Errorf("displayName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTreeOperations(t *testing.T) {
	tr := testTree(t, OneBranch).Clone()
	tests := []struct {
		name string
		op   func() error
		want error
	}{
		{"tool where it is already", func() error { return tr.AddTool(gateway("todo"), "base", nil, false) }, nil},
		{"tool already elsewhere", func() error { return tr.AddTool(gateway("todo"), "", []string{"text_response"}, false) }, ErrExists},
		{"unknown branch", func() error { return tr.AddTool(gateway("x"), "nope", nil, false) }, ErrNotFound},
		{"unknown chain", func() error { return tr.AddTool(gateway("x"), "", []string{"nope"}, false) }, ErrNotFound},
		{"branch taking a tool name", func() error { return tr.AddBranch("mcp_todo", "", "", "", true) }, ErrExists},
		{"remove root", func() error { return tr.RemoveBranch("base") }, ErrInvalid},
		{"remove unknown branch", func() error { return tr.RemoveBranch("nope") }, ErrNotFound},
		{"remove unknown tool", func() error { return tr.RemoveTool("nope", "", nil, true) }, ErrNotFound},
		{"add chained", func() error { return tr.AddTool(gateway("x"), "", []string{"mcp_todo"}, true) }, nil},
		{"remove chained", func() error { return tr.RemoveTool("mcp_x", "base", []string{"mcp_todo"}, false) }, nil},
		{"remove tool", func() error { return tr.RemoveTool("mcp_todo", "base", nil, false) }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.op(); !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
	if _, ok := tr.Node("base.mcp_todo"); ok {
		t.Error("an emptied chain sub-node was kept")
	}
	if got := strings.Join(tr.Root().OptionIDs(), ","); got != "text_response,cited_summarize,mcp_everything" {
		t.Errorf("root options = %s", got)
	}
}

func TestPlaceMissingBranchAndReplace(t *testing.T) {
	tr, _ := New(OneBranch, nil)
	tr.place(gateway("todo"), "tools", nil)
	n, ok := tr.Node("tools")
	if !ok || n.OptionIDs()[0] != "mcp_todo" {
		t.Fatalf("branch tools not created with mcp_todo: %v", tr.Text())
	}
	g := gateway("todo")
	tr.place(g, "tools", nil)
	if got, _ := tr.Tool("mcp_todo"); got != g {
		t.Error("place did not replace the tool of the same name")
	}
	if len(tr.Tools()) != 3 {
		t.Errorf("tools = %d, want 3", len(tr.Tools()))
	}
}

func TestParseInitMode(t *testing.T) {
	for in, want := range map[string]InitMode{"": OneBranch, "default": OneBranch, "multi_branch": MultiBranch, "empty": Empty} {
		if got, err := ParseInitMode(in); err != nil || got != want {
			t.Errorf("ParseInitMode(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseInitMode("two_branch"); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown mode: err = %v", err)
	}
}

// TestSetToolsWarnsOnce checks that a placement problem is logged once per
// SetTools, not once per init mode's tree.
func TestSetToolsWarnsOnce(t *testing.T) {
	var buf bytes.Buffer
	m := NewManager(&Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	m.SetTools([]Placement{
		{Tool: gateway("todo"), Branch: "servers"},
		{Tool: &fakeGateway{name: tools.TextResponseName, desc: "shadows the built-in"}},
	})
	for _, msg := range []string{"branch does not exist", "gateway replaces the tool of the same name"} {
		if got := strings.Count(buf.String(), msg); got != 1 {
			t.Errorf("%q logged %d times, want 1:\n%s", msg, got, buf.String())
		}
	}
}
