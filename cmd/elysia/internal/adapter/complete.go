package adapter

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/web"
)

var _ web.ServerCompleter = Servers{}

// Complete implements web.ServerCompleter: completion/complete for an
// argument of a server's prompt or resource template, as the user types.
func (a Servers) Complete(ctx context.Context, name string, req web.CompleteRequest) (web.Completion, error) {
	g, err := a.gateway(name)
	if err != nil {
		return web.Completion{}, err
	}
	var ref any = mcp.PromptReference{Type: web.RefPrompt, Name: req.Ref.Name}
	if req.Ref.Type == web.RefResource {
		ref = mcp.ResourceReference{Type: web.RefResource, URI: req.Ref.URI}
	}
	res, err := g.Complete(forUser(ctx), ref,
		mcp.CompleteArgument{Name: req.Argument.Name, Value: req.Argument.Value},
		mcp.CompleteContext{Arguments: req.Context.Arguments})
	if err != nil {
		return web.Completion{}, gatewayErr(g, err)
	}
	return web.Completion{Values: res.Values, Total: res.Total, HasMore: res.HasMore}, nil
}
