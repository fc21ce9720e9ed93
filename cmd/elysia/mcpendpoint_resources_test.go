package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/internal/testenv"
)

// TestMCPEndpointResourcesAndPrompts: two server-everything instances
// behind /mcp: their resources keep their URIs, a URI both list goes to
// the first with a warning in the log, a template's URI is read from the
// server that lists it, and prompts are named like tools.
func TestMCPEndpointResourcesAndPrompts(t *testing.T) {
	cfg := `{"expose": {"mode": "tools"}, "servers": {` + everythingServer(t, "") + `, ` +
		strings.Replace(everythingServer(t, ""), `"everything"`, `"second"`, 1) + `}}`
	s := startService(t, serveOptions{Config: cfg})
	c := capsClient(t, s.URL, mcp.ClientCapabilities{})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	res, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatalf("resources/list: %v", err)
	}
	var doc string
	seen := map[string]int{}
	for _, r := range res.Resources {
		seen[r.URI]++
		if doc == "" && strings.HasPrefix(r.URI, "demo://resource/static/document/") {
			doc = r.URI
		}
	}
	if doc == "" {
		t.Fatalf("resources/list has no static document of server-everything: %+v", res.Resources)
	}
	if seen[doc] != 1 {
		t.Errorf("%s listed %d times, want once (the first server's)", doc, seen[doc])
	}
	// The service's log reaches the test through a pipe, after the answer.
	testenv.WaitFor(t, 5*time.Second, "a warning about the shared URIs in the log", func() bool {
		return strings.Contains(s.out.String(), "resource listed by two servers goes to the first")
	})
	read, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: doc}})
	if err != nil || len(read.Contents) == 0 {
		t.Fatalf("resources/read %s: %v %+v", doc, err, read)
	}
	if tc, ok := read.Contents[0].(mcp.TextResourceContents); !ok || tc.URI != doc || tc.Text == "" {
		t.Errorf("resources/read %s = %+v, want its text", doc, read.Contents[0])
	}

	tmpls, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
	if err != nil || len(tmpls.ResourceTemplates) == 0 {
		t.Fatalf("resources/templates/list: %v %+v", err, tmpls)
	}
	for _, tm := range tmpls.ResourceTemplates {
		if tm.URITemplate.Raw() == "{+uri}" {
			t.Errorf("the endpoint's own router template is listed")
		}
	}
	uri := "demo://resource/dynamic/text/7"
	read, err = c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
	if err != nil || len(read.Contents) == 0 {
		t.Fatalf("resources/read %s (a template's): %v %+v", uri, err, read)
	}
	if _, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "nowhere://x"}}); err == nil {
		t.Errorf("resources/read of a URI no server lists succeeded")
	}

	prompts, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
	if err != nil {
		t.Fatalf("prompts/list: %v", err)
	}
	names := map[string]bool{}
	for _, p := range prompts.Prompts {
		names[p.Name] = true
	}
	for _, want := range []string{"everything__simple-prompt", "second__simple-prompt", "everything__args-prompt"} {
		if !names[want] {
			t.Errorf("prompts/list lacks %q: %v", want, names)
		}
	}
	if names["elysia.route"] {
		t.Errorf("the endpoint's own router prompt is listed")
	}
	got, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "second__simple-prompt"}})
	if err != nil || len(got.Messages) == 0 {
		t.Fatalf("prompts/get: %v %+v", err, got)
	}
	if tc, ok := got.Messages[0].Content.(mcp.TextContent); !ok || !strings.Contains(tc.Text, "simple prompt without arguments") {
		t.Errorf("prompts/get = %+v, want the server's text", got.Messages[0])
	}
	if _, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "simple-prompt"}}); err == nil {
		t.Errorf("prompts/get of an unprefixed name succeeded")
	}
}

// TestMCPEndpointCompletion: completion/complete for a prompt (named for
// the client) and a resource template reaches the server they go to.
func TestMCPEndpointCompletion(t *testing.T) {
	cfg := `{"expose": {"mode": "tools"}, "servers": {` + everythingServer(t, "") + `}}`
	s := startService(t, serveOptions{Config: cfg})
	c := capsClient(t, s.URL, mcp.ClientCapabilities{})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	complete := func(ref any, arg string, value string, args map[string]string) ([]string, error) {
		req := mcp.CompleteRequest{}
		req.Params.Ref = ref
		req.Params.Argument = mcp.CompleteArgument{Name: arg, Value: value}
		req.Params.Context = mcp.CompleteContext{Arguments: args}
		res, err := c.Complete(ctx, req)
		if err != nil {
			return nil, err
		}
		return res.Completion.Values, nil
	}
	got, err := complete(mcp.PromptReference{Type: "ref/prompt", Name: "everything__completable-prompt"}, "name", "",
		map[string]string{"department": "Sales"})
	if err != nil || strings.Join(got, ",") != "David,Eve,Frank" {
		t.Errorf("prompt completion = %v, %v; want David,Eve,Frank", got, err)
	}
	got, err = complete(mcp.ResourceReference{Type: "ref/resource", URI: "demo://resource/dynamic/text/{resourceId}"}, "resourceId", "42", nil)
	if err != nil || strings.Join(got, ",") != "42" {
		t.Errorf("template completion = %v, %v; want 42", got, err)
	}
	if _, err := complete(mcp.PromptReference{Type: "ref/prompt", Name: "completable-prompt"}, "name", "", nil); err == nil {
		t.Errorf("completion of a prompt the endpoint does not list succeeded")
	}
}
