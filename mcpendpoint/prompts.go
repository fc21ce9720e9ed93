package mcpendpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpendpoint/internal/content"
	"github.com/elysia-go/elysia/mcpendpoint/internal/held"
	"github.com/elysia-go/elysia/mcpendpoint/internal/names"
	"github.com/elysia-go/elysia/mcpendpoint/internal/reqstate"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/tools"
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
			want := names.Exposed(l.up.Config().ExposedPrefix(), ex.Separator, pi.Name)
			name, moved := names.Dedupe(want, taken)
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

// getPrompt gets the prompt the client names from its server; the
// server's questions meanwhile go to the client as during a tools/call. A
// 2026-07-28 client's runs held, as its tools/call does (getPromptHeld).
func (e *Endpoint) getPrompt(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	if isModern(ctx) && held.FromContext(ctx) == nil {
		return e.getPromptHeld(ctx, req)
	}
	return e.promptFor(ctx, req, e.callEmitter(ctx, mcp.CallToolRequest{}))
}

// getPromptHeld answers the prompts/get req of a 2026-07-28 client as
// routeModern answers a tools/call: it runs on a goroutine of the
// endpoint, its server's questions go to the client as input_required
// results under a sealed requestState, and a retry hands the answers to
// it, here or on the replica holding it. The prompt travels inside the
// held call's result (carryPrompt).
func (e *Endpoint) getPromptHeld(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	user := mcpgateway.UserFrom(ctx)
	name, _ := req.Params.Meta.AdditionalFields[nameKey].(string)
	bind := promptBind(name, req.Params.Arguments)
	w := &held.Waiter{Ctx: ctx}
	if text := req.Params.RequestState; text != "" {
		h, res, err := e.resumeHeld(ctx, user, text, bind, req.Params.InputResponses, taskPolicy{}, "get the prompt again")
		if h == nil {
			return promptOf(res, err)
		}
		return promptOf(e.await(ctx, h, w))
	}
	h, err := e.startHeld(ctx, user, w, req.Params.InputResponses, func() []byte { return bind },
		func(ctx context.Context) (*mcp.CallToolResult, error) {
			p, err := e.promptFor(ctx, req, e.callEmitter(ctx, mcp.CallToolRequest{}))
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{StructuredContent: p}, nil
		})
	if err != nil {
		return nil, err
	}
	return promptOf(e.await(ctx, h, w))
}

// promptBind is what the requestStates of a prompts/get of name with args
// are bound to; a tool's name has no NUL to be taken for it.
func promptBind(name string, args map[string]string) []byte {
	m := make(map[string]any, len(args))
	for k, v := range args {
		m[k] = v
	}
	return reqstate.BindHash("prompts/get\x00"+name, m)
}

// promptOf turns the outcome of a held prompts/get into its answer: the
// questions of an input_required result, or the prompt it carries, here
// or as another replica relayed it (JSON).
func promptOf(res *mcp.CallToolResult, err error) (*mcp.GetPromptResult, error) {
	switch {
	case err != nil:
		return nil, err
	case res == nil:
		return nil, errors.New("the prompt ended without an answer")
	case res.ResultType == mcp.ResultTypeInputRequired:
		return &mcp.GetPromptResult{Result: res.Result, MultiRoundTripResult: res.MultiRoundTripResult, Messages: []mcp.PromptMessage{}}, nil
	}
	if p, ok := res.StructuredContent.(*mcp.GetPromptResult); ok {
		return p, nil
	}
	raw := json.RawMessage(res.RawStructuredContent)
	if len(raw) == 0 {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, fmt.Errorf("the prompt's answer: %w", err)
		}
		raw = b
	}
	p, err := mcp.ParseGetPromptResult(&raw)
	if err != nil || p.Messages == nil {
		return nil, errors.New("the prompt's answer from the replica holding it is not a prompt")
	}
	return p, nil
}

// promptFor gets the prompt req names from its server for ctx's user, its
// server's questions meanwhile going to emit (nil: declined).
func (e *Endpoint) promptFor(ctx context.Context, req mcp.GetPromptRequest, emit tools.Emitter) (*mcp.GetPromptResult, error) {
	name, _ := req.Params.Meta.AdditionalFields[nameKey].(string)
	for _, p := range e.prompts(ctx) {
		if p.prompt.Name != name {
			continue
		}
		msgs, err := p.up.GetPromptFor(mcpgateway.WithUser(ctx, mcpgateway.UserFrom(ctx)), p.name, req.Params.Arguments, emit)
		if err != nil {
			return nil, err
		}
		res := &mcp.GetPromptResult{Description: p.prompt.Description, Messages: make([]mcp.PromptMessage, 0, len(msgs))}
		for _, m := range msgs {
			res.Messages = append(res.Messages, mcp.PromptMessage{Role: mcp.Role(m.Role), Content: content.Item(m.Content)})
		}
		return res, nil
	}
	return nil, fmt.Errorf("no prompt %q: %w", name, mcpserver.ErrPromptNotFound)
}
