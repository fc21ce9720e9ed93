package catalog

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

// TestEncodeTool: a tool is encoded with its name, and its description,
// schemas and annotations as the server sent them: compacted, <, > and &
// unescaped, an annotation no library knows kept, a value that is not
// JSON left out.
func TestEncodeTool(t *testing.T) {
	for _, tt := range []struct {
		en   Entry
		want string
	}{
		{Entry{Name: "s__pick", Info: mcpgateway.ToolInfo{
			Description:  "a <b>bold</b> & odd tool",
			InputSchema:  json.RawMessage("{\"type\": \"object\",\n \"properties\": {\"q\": {\"pattern\": \"^<[a-z]+>&$\"}}}"),
			OutputSchema: json.RawMessage(`{"type":"object"}`),
			Annotations:  json.RawMessage(`{"readOnlyHint": true, "x-vendor": {"cost": 3}}`),
		}}, `{"name":"s__pick","description":"a <b>bold</b> & odd tool",` +
			`"inputSchema":{"type":"object","properties":{"q":{"pattern":"^<[a-z]+>&$"}}},"outputSchema":{"type":"object"},` +
			`"annotations":{"readOnlyHint":true,"x-vendor":{"cost":3}}}`},
		{Entry{Name: "bare", Info: mcpgateway.ToolInfo{InputSchema: json.RawMessage(`{"type":"object"}`)}},
			`{"name":"bare","inputSchema":{"type":"object"}}`},
		{Entry{Name: "bad\"\n", Info: mcpgateway.ToolInfo{InputSchema: json.RawMessage(`{"type":`), Annotations: json.RawMessage(`nope`)}},
			`{"name":"bad\"\n"}`},
	} {
		var b bytes.Buffer
		encodeTool(&b, &tt.en)
		if b.String() != tt.want {
			t.Errorf("encodeTool(%q) =\n%s\nwant\n%s", tt.en.Name, b.String(), tt.want)
		}
	}
}

// TestPageMatchesListed: a page encoded once holds the tools Listed gives
// mcp-go, ask included, as a client reads them.
func TestPageMatchesListed(t *testing.T) {
	s := listing("s", "a", "b")
	s.pages[0].Tools[1].Annotations = json.RawMessage(`{"title":"B","readOnlyHint":true}`)
	s.pages[0].Tools[1].OutputSchema = json.RawMessage(`{"type":"object"}`)
	c, _ := Build(0, mcpconfig.DefaultExpose(), []Listing{{Up: s, Tools: s.pages[0].Tools}})
	var page struct {
		Tools []mcp.Tool `json:"tools"`
	}
	if err := json.Unmarshal(c.Page("", true), &page); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(page.Tools)
	var listed []mcp.Tool // as a client reads mcp-go's answer
	b, _ := json.Marshal(append(c.Listed(), AskTool()))
	if err := json.Unmarshal(b, &listed); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(listed)
	if !bytes.Equal(got, want) || len(listed) != 3 {
		t.Errorf("page\n%s\nwant\n%s", got, want)
	}
}

// TestPages: a list over pageSize tools comes in pages, each with the
// cursor of the next; ask ends the last; a cursor that is not ours starts
// from the top.
func TestPages(t *testing.T) {
	c := &Catalog{}
	for i := range pageSize + 500 {
		c.entries = append(c.entries, Entry{Name: "t" + strconv.Itoa(i),
			Info: mcpgateway.ToolInfo{InputSchema: json.RawMessage(`{"type":"object"}`)}})
	}
	type page struct {
		NextCursor string            `json:"nextCursor"`
		Tools      []json.RawMessage `json:"tools"`
	}
	read := func(b []byte) page {
		var p page
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := read(c.Page("", true))
	if len(first.Tools) != pageSize || first.NextCursor == "" {
		t.Fatalf("first page: %d tools, cursor %q", len(first.Tools), first.NextCursor)
	}
	last := read(c.Page(first.NextCursor, true))
	if len(last.Tools) != 501 || last.NextCursor != "" || !strings.Contains(string(last.Tools[500]), `"name":"ask"`) {
		t.Fatalf("last page: %d tools, cursor %q, last %s", len(last.Tools), last.NextCursor, last.Tools[len(last.Tools)-1])
	}
	for _, bad := range []string{"bm90IG91cnM=", "%%%", base64.StdEncoding.EncodeToString([]byte("o:99999")), base64.StdEncoding.EncodeToString([]byte("o:-1"))} {
		if got := pageStart(bad, pageSize+501); got != 0 {
			t.Errorf("cursor %q starts at %d, want 0", bad, got)
		}
	}
	if n := len(c.pages); n != 2 {
		t.Errorf("%d pages kept, want the two the cursors name", n)
	}
	read(c.page(7, true)) // a start no cursor of ours names: built, not kept
	if n := len(c.pages); n != 2 {
		t.Errorf("%d pages kept after an odd start, want 2", n)
	}
	if p := read(c.Page(first.NextCursor, false)); len(p.Tools) != 500 || p.NextCursor != "" {
		t.Errorf("last page without ask: %d tools, cursor %q", len(p.Tools), p.NextCursor)
	}
}

// TestPageOf: PageOf pages a list as Page does.
func TestPageOf(t *testing.T) {
	list := make([]mcp.Tool, pageSize+3)
	for i := range list {
		list[i].Name = "t" + strconv.Itoa(i)
	}
	first, next := PageOf(list, "")
	if len(first) != pageSize || first[0].Name != "t0" || next != mcp.Cursor(nextCursor(pageSize)) {
		t.Fatalf("first page: %d tools, cursor %q", len(first), next)
	}
	last, next := PageOf(list, next)
	if len(last) != 3 || last[0].Name != "t1000" || next != "" {
		t.Errorf("last page: %d tools, cursor %q", len(last), next)
	}
	if p, next := PageOf(list, "bm90IG91cnM="); len(p) != pageSize || p[0].Name != "t0" || next == "" {
		t.Errorf("a cursor not ours: %d tools from %s", len(p), p[0].Name)
	}
	if p, next := PageOf(nil, ""); len(p) != 0 || next != "" {
		t.Errorf("no tools: %v, cursor %q", p, next)
	}
}

// gatewayTool is a tools.Tool with inputs.
type gatewayTool struct{ tools.Tool }

func (gatewayTool) Name() string        { return "mcp_todo" }
func (gatewayTool) Description() string { return "the todo server" }
func (gatewayTool) Inputs() []tools.Input {
	return []tools.Input{
		{Name: "action", Type: "string", Description: "what to do", Required: true, Enum: []string{"list", "call"}},
		{Name: "limit", Type: "integer", Description: "most tools", Default: 10},
	}
}

func TestGatewayTool(t *testing.T) {
	got := GatewayTool(gatewayTool{})
	want := `{"properties":{"action":{"description":"what to do","enum":["list","call"],"type":"string"},` +
		`"limit":{"default":10,"description":"most tools","type":"integer"}},"required":["action"],"type":"object"}`
	if got.Name != "mcp_todo" || got.Description != "the todo server" || string(got.RawInputSchema) != want {
		t.Errorf("GatewayTool = %s %q %s, want the schema\n%s", got.Name, got.Description, got.RawInputSchema, want)
	}
}
