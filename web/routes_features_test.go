package web

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/elysia-go/elysia/tree"
)

// featureServers is fakeServers with resources, prompts and a log: todo
// has one of each (and a prompt without arguments or messages); other
// servers are unknown.
type featureServers struct{ fakeServers }

var _ ServerFeatures = featureServers{}

func (featureServers) known(name string) error {
	if name != "todo" && name != "mcp_todo" {
		return fmt.Errorf("server %q: %w", name, tree.ErrNotFound)
	}
	return nil
}

func (f featureServers) Resources(ctx context.Context, name string) ([]ResourceInfo, error) {
	return []ResourceInfo{
		{URI: "todo://lists/home", Name: "home", Description: "The home list", MIMEType: "application/json"},
		{URITemplate: "todo://lists/{name}", Name: "list"},
	}, f.known(name)
}

func (f featureServers) ReadResource(ctx context.Context, name, uri string) (ExecuteResult, error) {
	return ExecuteResult{Content: []map[string]any{{"type": "resource", "uri": uri, "text": "[]", "mime_type": "application/json"}}}, f.known(name)
}

func (f featureServers) Prompts(ctx context.Context, name string) ([]PromptInfo, error) {
	return []PromptInfo{
		{Name: "bare", Arguments: []PromptArgument{}},
		{Name: "plan", Description: "Plan a day", Arguments: []PromptArgument{{Name: "day", Description: "Which day", Required: true}}},
	}, f.known(name)
}

func (f featureServers) GetPrompt(ctx context.Context, name, prompt string, args map[string]string) ([]PromptMessage, error) {
	if prompt == "bare" {
		return nil, f.known(name)
	}
	return []PromptMessage{{Role: "user", Content: map[string]any{"type": "text", "text": "Plan " + args["day"]}}}, f.known(name)
}

func (f featureServers) Logs(ctx context.Context, name string) ([]LogEntry, error) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	return []LogEntry{{Time: at, Level: "warning", Logger: "todo", Data: "disk almost full"}, {Time: at, Level: "info", Data: "saved", User: "alice"}}, f.known(name)
}

// TestFeatureRoutesGolden pins the wire format of the resources, prompts
// and logs routes: web's own types, whatever the gateways use.
func TestFeatureRoutesGolden(t *testing.T) {
	h := newHarness(t, nil)
	srv := New(Deps{Trees: h.trees, Servers: featureServers{}}, &Options{Assets: testAssets})
	for _, c := range []struct{ name, method, path, body string }{
		{"server_resources", http.MethodPost, "/api/servers/todo/resources", ""},
		{"server_resources_read", http.MethodPost, "/api/servers/todo/resources/read", `{"uri": "todo://lists/home"}`},
		{"server_prompts", http.MethodPost, "/api/servers/todo/prompts", ""},
		{"server_prompts_get", http.MethodPost, "/api/servers/todo/prompts/get", `{"name": "plan", "arguments": {"day": "Monday"}}`},
		{"server_prompts_get_empty", http.MethodPost, "/api/servers/todo/prompts/get", `{"name": "bare"}`},
		{"server_logs", http.MethodGet, "/api/servers/todo/logs", ""},
		{"server_logs_unknown", http.MethodGet, "/api/servers/nope/logs", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h.srv = srv
			checkGolden(t, c.name, h.do(t, c.method, c.path, c.body))
		})
	}
}
