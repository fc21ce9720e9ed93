package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web"
)

// featureServer starts an MCP server (mcp-go, streamable HTTP) with a
// resource, a resource template, a prompt and a tool that logs, and returns
// its URL.
func featureServer(t *testing.T) string {
	t.Helper()
	s := server.NewMCPServer("features", "1.0.0", server.WithResourceCapabilities(false, false),
		server.WithPromptCapabilities(false), server.WithLogging())
	s.AddResource(mcp.NewResource("file:///notes/today.md", "today", mcp.WithResourceDescription("Today's notes"), mcp.WithMIMEType("text/markdown")),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/markdown", Text: "# Today\nBuy milk."}}, nil
		})
	s.AddResourceTemplate(mcp.NewResourceTemplate("file:///notes/{day}.md", "day", mcp.WithTemplateDescription("One day's notes")),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: "nothing"}}, nil
		})
	s.AddPrompt(mcp.NewPrompt("plan", mcp.WithPromptDescription("Plan a day"), mcp.WithArgument("day", mcp.RequiredArgument(), mcp.ArgumentDescription("Which day"))),
		func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult("Plan", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("Plan "+req.Params.Arguments["day"]))}), nil
		})
	s.AddPrompt(mcp.NewPrompt("bare"), func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return mcp.NewGetPromptResult("", nil), nil
	})
	s.AddTool(mcp.NewTool("shout"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/message",
			map[string]any{"level": "warning", "logger": "shouter", "data": "loud"}); err != nil {
			return nil, err
		}
		return mcp.NewToolResultText("shouted"), nil
	})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// wire returns the JSON of v as web writes it (no HTML escaping).
func wire(t *testing.T, v any) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// TestFeaturesOnTheWire checks that the feature routes send what the
// gateway gives, byte for byte, whatever types carry it: resources and
// templates, a resource read, prompts (with and without arguments), a
// filled prompt and the server's log.
func TestFeaturesOnTheWire(t *testing.T) {
	url, _ := json.Marshal(featureServer(t))
	d := newDiscovery(t, `{"servers": {"notes": {"type": "http", "url": `+string(url)+`}}}`, nil)
	srv := web.New(web.Deps{Trees: tree.NewManager(nil), Servers: NewServers(d, nil)}, nil)
	g, _ := d.Gateway("notes")
	ctx := t.Context()
	// route answers a request (without keys: as an admin) and returns
	// field of its body as sent.
	route := func(method, path, body, field string) string {
		t.Helper()
		req := httptest.NewRequestWithContext(ctx, method, path, strings.NewReader(body))
		req.Host = "127.0.0.1"
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		var got map[string]json.RawMessage
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != 200 {
			t.Fatalf("%s %s: %d %v: %s", method, path, rec.Code, err, rec.Body)
		}
		return string(got[field])
	}
	check := func(what, got string, want any) {
		t.Helper()
		t.Logf("%s: %s", what, got)
		if w := wire(t, want); got != w {
			t.Errorf("%s on the wire:\n got %s\nwant %s (the gateway's own)", what, got, w)
		}
	}

	wantRes, _ := g.ListResources(ctx)
	if len(wantRes) != 2 {
		t.Fatalf("the gateway lists %d resources, want a resource and a template", len(wantRes))
	}
	check("resources", route("POST", "/api/servers/notes/resources", "", "resources"), wantRes)

	wantRead, _ := g.ReadResource(ctx, "file:///notes/today.md")
	check("a resource read", route("POST", "/api/servers/notes/resources/read", `{"uri": "file:///notes/today.md"}`, "result"),
		web.ExecuteResult{IsError: wantRead.IsError, Content: wantRead.Content, Structured: wantRead.Structured})

	wantPrompts, _ := g.ListPrompts(ctx)
	check("prompts", route("POST", "/api/servers/notes/prompts", "", "prompts"), wantPrompts)

	for _, p := range []string{"plan", "bare"} {
		wantMsgs, _ := g.GetPrompt(ctx, p, map[string]string{"day": "Monday"})
		check("prompt "+p, route("POST", "/api/servers/notes/prompts/get", `{"name": "`+p+`", "arguments": {"day": "Monday"}}`, "messages"), wantMsgs)
	}

	if _, err := g.Execute(ctx, "shout", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	var wantLogs []mcpgateway.LogEntry
	testenv.WaitFor(t, 10*time.Second, "the server's log message", func() bool {
		wantLogs = g.Logs()
		return len(wantLogs) > 0
	})
	check("logs", route("GET", "/api/servers/notes/logs", "", "logs"), wantLogs)
}
