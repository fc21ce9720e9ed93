package adapter

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web"
)

// teamCompleter completes the "team" prompt's arguments as
// server-everything's completable-prompt does: department from a list,
// name from the department the context names. The department "Huge"
// answers 150 values, one of them 5,000 bytes long.
type teamCompleter struct{}

func (teamCompleter) CompletePromptArgument(ctx context.Context, prompt string, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	var all []string
	switch {
	case arg.Name == "department":
		all = []string{"Engineering", "Sales", "Support"}
	case cctx.Arguments["department"] == "Sales":
		all = []string{"David", "Eve"}
	case cctx.Arguments["department"] == "Huge":
		all = append(all, strings.Repeat("x", 5000))
		for i := range 149 {
			all = append(all, "v"+strconv.Itoa(i))
		}
	}
	out := []string{}
	for _, v := range all {
		if strings.HasPrefix(v, arg.Value) {
			out = append(out, v)
		}
	}
	return &mcp.Completion{Values: out}, nil
}

func (teamCompleter) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	return &mcp.Completion{Values: []string{uri + " " + arg.Name + "=" + arg.Value}}, nil
}

// TestCompleteRoute asks POST /api/servers/:name/complete of a real MCP
// server: suggestions narrowed by what was typed and by the other
// arguments, a resource template's, the caps on a server's answer, and
// the requests refused before any server is asked.
func TestCompleteRoute(t *testing.T) {
	s := server.NewMCPServer("team", "1.0.0", server.WithPromptCapabilities(false), server.WithResourceCapabilities(false, false),
		server.WithCompletions(), server.WithPromptCompletionProvider(teamCompleter{}), server.WithResourceCompletionProvider(teamCompleter{}))
	s.AddPrompt(mcp.NewPrompt("team", mcp.WithArgument("department"), mcp.WithArgument("name")),
		func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult("", nil), nil
		})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(ts.Close)
	url, _ := json.Marshal(ts.URL + "/mcp")
	d := newDiscovery(t, `{"servers": {"team": {"type": "http", "url": `+string(url)+`}}}`, nil)
	srv := web.New(web.Deps{Trees: tree.NewManager(nil), Servers: NewServers(d, nil)}, nil)

	post := func(path, body string) (int, map[string]json.RawMessage) {
		t.Helper()
		req := httptest.NewRequestWithContext(t.Context(), "POST", path, strings.NewReader(body))
		req.Host = "127.0.0.1"
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		var got map[string]json.RawMessage
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatalf("POST %s: %d %v: %s", path, rec.Code, err, rec.Body)
		}
		return rec.Code, got
	}
	for _, c := range []struct{ name, body, want string }{
		{"a department", `{"ref": {"type": "ref/prompt", "name": "team"}, "argument": {"name": "department", "value": "S"}}`,
			`{"values":["Sales","Support"],"has_more":false}`},
		{"a name in Sales", `{"ref": {"type": "ref/prompt", "name": "team"}, "argument": {"name": "name", "value": ""}, "context": {"arguments": {"department": "Sales"}}}`,
			`{"values":["David","Eve"],"has_more":false}`},
		{"a template's variable", `{"ref": {"type": "ref/resource", "uri": "notes://{day}"}, "argument": {"name": "day", "value": "Mo"}}`,
			`{"values":["notes://{day} day=Mo"],"has_more":false}`},
	} {
		code, got := post("/api/servers/team/complete", c.body)
		if code != 200 || string(got["completion"]) != c.want {
			t.Errorf("%s: %d %s; want 200 %s", c.name, code, got["completion"], c.want)
		}
	}

	// A server's 150 values, one huge: 100 at most, none over the cap.
	code, got := post("/api/servers/team/complete", `{"ref": {"type": "ref/prompt", "name": "team"}, "argument": {"name": "name", "value": ""}, "context": {"arguments": {"department": "Huge"}}}`)
	var comp web.Completion
	if err := json.Unmarshal(got["completion"], &comp); err != nil || code != 200 {
		t.Fatalf("a huge completion: %d %v", code, err)
	}
	long := 0
	for _, v := range comp.Values {
		long = max(long, len(v))
	}
	if n := len(comp.Values); n < 90 || n > 100 || long > 1024 || !comp.HasMore {
		t.Errorf("a huge completion: %d values, the longest %d bytes, has_more %v; want at most 100 short ones and has_more", n, long, comp.HasMore)
	}

	// Refused before a server is asked.
	for _, c := range []struct{ name, path, body, want string }{
		{"no ref type", "/api/servers/team/complete", `{"ref": {"name": "team"}, "argument": {"name": "x"}}`, "ref.type"},
		{"a prompt without a name", "/api/servers/team/complete", `{"ref": {"type": "ref/prompt"}, "argument": {"name": "x"}}`, "needs a name"},
		{"no argument name", "/api/servers/team/complete", `{"ref": {"type": "ref/prompt", "name": "team"}, "argument": {"value": "x"}}`, "argument.name"},
		{"an unknown server", "/api/servers/nope/complete", `{"ref": {"type": "ref/prompt", "name": "team"}, "argument": {"name": "x"}}`, "nope"},
	} {
		code, got := post(c.path, c.body)
		if code/100 != 4 || !strings.Contains(string(got["error"]), c.want) || string(got["completion"]) != "null" {
			t.Errorf("%s: %d %s %s; want a 4xx naming %s", c.name, code, got["error"], got["completion"], c.want)
		}
	}
}
