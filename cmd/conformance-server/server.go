package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// watched is the resource a client subscribes to in the scenarios.
const watched = "test://watched-resource"

// half is what one fixture serves (--only).
type half int

const (
	both   half = iota // everything
	modern             // the 2026-07-28 and Tasks scenarios' tools and prompt
	legacy             // the rest: what the 2025-11-25 scenarios call
)

// parseHalf parses the value of --only; "" is both.
func parseHalf(s string) (half, error) {
	switch s {
	case "":
		return both, nil
	case "modern":
		return modern, nil
	case "legacy":
		return legacy, nil
	}
	return both, fmt.Errorf("--only must be modern or legacy, got %q", s)
}

// newServer returns the fixture: every tool, resource, template and
// prompt of h that the conformance suite's server scenarios name, with
// logging, and for the legacy half completion and resource subscriptions.
// Its tools that notify answer once out has written their notifications.
func newServer(out *sentWriter, h half) *mcpserver.MCPServer {
	hooks := &mcpserver.Hooks{}
	// A subscription is answered with one notifications/resources/updated
	// for its URI at once, so that a proxy's relay of it can be seen.
	hooks.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		srv := mcpserver.ServerFromContext(ctx)
		_ = srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationResourceUpdated), // a gone client misses it
			map[string]any{"uri": req.Params.URI})
	})
	opts := []mcpserver.ServerOption{
		mcpserver.WithToolCapabilities(true),
		mcpserver.WithPromptCapabilities(true),
		mcpserver.WithLogging(),
		mcpserver.WithRecovery(),
	}
	if h != modern {
		opts = append(opts,
			mcpserver.WithResourceCapabilities(true, true),
			mcpserver.WithCompletions(),
			mcpserver.WithPromptCompletionProvider(completer{}),
			mcpserver.WithResourceCompletionProvider(completer{}),
			mcpserver.WithHooks(hooks))
	}
	if h != legacy {
		opts = append(opts, mcpserver.WithToolFilter(listTaskSupport))
	}
	s := mcpserver.NewMCPServer("elysia-conformance-fixture", version, opts...)
	if h != modern {
		addTools(s, out)
		addResources(s)
		addPrompts(s)
	}
	if h != legacy {
		addInputTools(s)
		addHeaderTools(s)
		addTaskTools(s)
		addTriggerTools(s)
	}
	return s
}

// addResources registers the static resources and the template.
func addResources(s *mcpserver.MCPServer) {
	s.AddResource(mcp.NewResource("test://static-text", "Static text",
		mcp.WithResourceDescription("A static text resource"), mcp.WithMIMEType("text/plain")),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: "test://static-text", MIMEType: "text/plain",
				Text: "This is the content of the static text resource."}}, nil
		})
	s.AddResource(mcp.NewResource("test://static-binary", "Static binary",
		mcp.WithResourceDescription("A 1x1 PNG"), mcp.WithMIMEType("image/png")),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.BlobResourceContents{URI: "test://static-binary", MIMEType: "image/png", Blob: pngData}}, nil
		})
	s.AddResource(mcp.NewResource(watched, "Watched resource",
		mcp.WithResourceDescription("A resource to subscribe to"), mcp.WithMIMEType("text/plain")),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: watched, MIMEType: "text/plain", Text: "Watched resource content"}}, nil
		})
	s.AddResourceTemplate(mcp.NewResourceTemplate("test://template/{id}/data", "Template data",
		mcp.WithTemplateDescription("Data for an id"), mcp.WithTemplateMIMEType("application/json")),
		func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			id := templateID.FindStringSubmatch(req.Params.URI)
			if id == nil {
				return nil, fmt.Errorf("not a template URI: %q", req.Params.URI)
			}
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "application/json",
				Text: fmt.Sprintf(`{"id":%q,"templateTest":true,"data":"Data for ID: %s"}`, id[1], id[1])}}, nil
		})
}

// templateID takes the id out of a URI of the template.
var templateID = regexp.MustCompile(`^test://template/([^/]+)/data$`)

// addPrompts registers the four prompts.
func addPrompts(s *mcpserver.MCPServer) {
	msg := func(c mcp.Content) mcp.PromptMessage { return mcp.NewPromptMessage(mcp.RoleUser, c) }
	s.AddPrompt(mcp.NewPrompt("test_simple_prompt", mcp.WithPromptDescription("A prompt without arguments")),
		func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult("simple", []mcp.PromptMessage{msg(mcp.NewTextContent("This is a simple prompt for testing."))}), nil
		})
	s.AddPrompt(mcp.NewPrompt("test_prompt_with_arguments", mcp.WithPromptDescription("A prompt with two arguments"),
		mcp.WithArgument("arg1", mcp.ArgumentDescription("First test argument"), mcp.RequiredArgument()),
		mcp.WithArgument("arg2", mcp.ArgumentDescription("Second test argument"), mcp.RequiredArgument())),
		func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			a := req.Params.Arguments
			return mcp.NewGetPromptResult("with arguments", []mcp.PromptMessage{
				msg(mcp.NewTextContent(fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", a["arg1"], a["arg2"]))),
			}), nil
		})
	s.AddPrompt(mcp.NewPrompt("test_prompt_with_embedded_resource", mcp.WithPromptDescription("A prompt embedding a resource"),
		mcp.WithArgument("resourceUri", mcp.ArgumentDescription("URI of the resource to embed"), mcp.RequiredArgument())),
		func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult("embedded resource", []mcp.PromptMessage{
				msg(mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: req.Params.Arguments["resourceUri"], MIMEType: "text/plain",
					Text: "Embedded resource content for testing."})),
				msg(mcp.NewTextContent("Please process the embedded resource above.")),
			}), nil
		})
	s.AddPrompt(mcp.NewPrompt("test_prompt_with_image", mcp.WithPromptDescription("A prompt with an image")),
		func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult("image", []mcp.PromptMessage{
				msg(mcp.NewImageContent(pngData, "image/png")),
				msg(mcp.NewTextContent("Please analyze the image above.")),
			}), nil
		})
}

// completer completes test_prompt_with_arguments' arguments and the
// template's id from fixed lists, by prefix.
type completer struct{}

var (
	_ mcpserver.PromptCompletionProvider   = completer{}
	_ mcpserver.ResourceCompletionProvider = completer{}
)

// CompletePromptArgument completes a prompt argument.
func (completer) CompletePromptArgument(_ context.Context, _ string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	return complete(arg.Value, "paris", "park", "party", "test", "testValue1"), nil
}

// CompleteResourceArgument completes a template argument.
func (completer) CompleteResourceArgument(_ context.Context, _ string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	return complete(arg.Value, "1", "123", "42"), nil
}

func complete(prefix string, values ...string) *mcp.Completion {
	out := []string{}
	for _, v := range values {
		if strings.HasPrefix(v, prefix) {
			out = append(out, v)
		}
	}
	return &mcp.Completion{Values: out, Total: len(out)}
}
