package mcpendpoint

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway"
)

// Completer is an Upstream that passes on completion/complete;
// *mcpgateway.Gateway is one. ref is the server's own
// mcp.PromptReference or mcp.ResourceReference.
type Completer interface {
	Complete(ctx context.Context, ref any, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error)
}

// completions answers completion/complete for the prompts and resource
// templates the endpoint lists, from the server they go to.
type completions struct{ e *Endpoint }

var (
	_ mcpserver.PromptCompletionProvider   = completions{}
	_ mcpserver.ResourceCompletionProvider = completions{}
)

// CompletePromptArgument completes an argument of the prompt the client
// knows as name.
func (c completions) CompletePromptArgument(ctx context.Context, name string, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	for _, p := range c.e.prompts(ctx) {
		if p.prompt.Name != name {
			continue
		}
		comp, ok := p.up.(Completer)
		if !ok {
			break
		}
		return comp.Complete(mcpgateway.WithUser(ctx, mcpgateway.UserFrom(ctx)), mcp.PromptReference{Type: "ref/prompt", Name: p.name}, arg, cctx)
	}
	return nil, fmt.Errorf("no prompt %q: %w", name, mcpserver.ErrPromptNotFound)
}

// CompleteResourceArgument completes an argument of a resource template
// (uri is the template, or a resource's URI), from the server it goes to.
func (c completions) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	_, tmpls, owner, tmplOwner := c.e.resources(ctx, false)
	r := owner[uri]
	for i := 0; r == nil && i < len(tmpls); i++ {
		if tmpls[i].URITemplate.Raw() == uri {
			r = tmplOwner[i]
		}
	}
	comp, ok := r.(Completer)
	if !ok {
		return nil, fmt.Errorf("no server of this service lists resource template %q: %w", uri, mcpserver.ErrResourceNotFound)
	}
	return comp.Complete(mcpgateway.WithUser(ctx, mcpgateway.UserFrom(ctx)), mcp.ResourceReference{Type: "ref/resource", URI: uri}, arg, cctx)
}
