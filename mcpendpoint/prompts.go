package mcpendpoint

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway"
)

// promptEntry is one prompt as the client sees it.
type promptEntry struct {
	prompt mcp.Prompt // named for the client
	up     Resourceful
	name   string // the server's own name
}

// prompts returns every prompt ctx's user is listed, named like tools
// (<prefix><separator><prompt>, cleaned, cut, a taken name suffixed).
func (e *Endpoint) prompts(ctx context.Context) []promptEntry {
	ex := e.expose()
	lists := perServer(e, ctx, "prompts", func(ctx context.Context, r Resourceful) ([]mcpgateway.PromptInfo, error) {
		return r.ListPrompts(ctx)
	})
	var out []promptEntry
	taken := map[string]bool{}
	for _, l := range lists {
		for _, pi := range l.v {
			want := exposedName(l.up.Config().ExposedPrefix(), ex.Separator, pi.Name)
			name, moved := dedupe(want, taken)
			if moved {
				e.logger.Warn("aggregate endpoint: prompt name taken, listed under another", logKeyServer, l.server, "prompt", pi.Name,
					logKeyWanted, want, logKeyName, name)
			}
			p := mcp.Prompt{Name: name, Description: pi.Description}
			for _, a := range pi.Arguments {
				p.Arguments = append(p.Arguments, mcp.PromptArgument{Name: a.Name, Description: a.Description, Required: a.Required})
			}
			out = append(out, promptEntry{prompt: p, up: l.up.(Resourceful), name: pi.Name})
		}
	}
	return out
}

// afterListPrompts replaces mcp-go's list (the router only) with every
// server's prompts for ctx's user.
func (e *Endpoint) afterListPrompts(ctx context.Context, _ any, _ *mcp.ListPromptsRequest, res *mcp.ListPromptsResult) {
	res.Prompts, res.NextCursor = []mcp.Prompt{}, ""
	for _, p := range e.prompts(ctx) {
		res.Prompts = append(res.Prompts, p.prompt)
	}
}

// beforeGetPrompt renames every prompts/get to the router, keeping the
// client's name in _meta, as beforeCallTool does for tools.
func (e *Endpoint) beforeGetPrompt(_ context.Context, _ any, req *mcp.GetPromptRequest) {
	if req.Params.Meta == nil {
		req.Params.Meta = &mcp.Meta{}
	}
	if req.Params.Meta.AdditionalFields == nil {
		req.Params.Meta.AdditionalFields = map[string]any{}
	}
	req.Params.Meta.AdditionalFields[nameKey] = req.Params.Name
	req.Params.Name = routerPrompt
}

// getPrompt gets the prompt the client names from its server.
func (e *Endpoint) getPrompt(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	name, _ := req.Params.Meta.AdditionalFields[nameKey].(string)
	for _, p := range e.prompts(ctx) {
		if p.prompt.Name != name {
			continue
		}
		msgs, err := p.up.GetPrompt(mcpgateway.WithUser(ctx, mcpgateway.UserFrom(ctx)), p.name, req.Params.Arguments)
		if err != nil {
			return nil, err
		}
		res := &mcp.GetPromptResult{Description: p.prompt.Description, Messages: make([]mcp.PromptMessage, 0, len(msgs))}
		for _, m := range msgs {
			res.Messages = append(res.Messages, mcp.PromptMessage{Role: mcp.Role(m.Role), Content: contentOf(m.Content)})
		}
		return res, nil
	}
	return nil, fmt.Errorf("no prompt %q: %w", name, mcpserver.ErrPromptNotFound)
}
