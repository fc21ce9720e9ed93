package adapter

import (
	"context"

	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/web"
)

var _ web.ServerFeatures = Servers{}

// Resources implements web.ServerFeatures: a server's resources and
// resource templates.
func (a Servers) Resources(ctx context.Context, name string) ([]web.ResourceInfo, error) {
	g, err := a.gateway(name)
	if err != nil {
		return nil, err
	}
	res, err := g.ListResources(forUser(ctx))
	if err != nil {
		return nil, gatewayErr(g, err)
	}
	return convert(res, func(r mcpgateway.ResourceInfo) web.ResourceInfo {
		return web.ResourceInfo{URI: r.URI, URITemplate: r.URITemplate, Name: r.Name, Description: r.Description, MIMEType: r.MIMEType}
	}), nil
}

// ReadResource implements web.ServerFeatures: one resource of a server.
func (a Servers) ReadResource(ctx context.Context, name, uri string) (web.ExecuteResult, error) {
	g, err := a.gateway(name)
	if err != nil {
		return web.ExecuteResult{}, err
	}
	res, err := g.ReadResource(forUser(ctx), uri)
	if err != nil {
		return web.ExecuteResult{}, gatewayErr(g, err)
	}
	return web.ExecuteResult{IsError: res.IsError, Content: res.Content, Structured: res.Structured}, nil
}

// Prompts implements web.ServerFeatures: a server's prompts.
func (a Servers) Prompts(ctx context.Context, name string) ([]web.PromptInfo, error) {
	g, err := a.gateway(name)
	if err != nil {
		return nil, err
	}
	res, err := g.ListPrompts(forUser(ctx))
	if err != nil {
		return nil, gatewayErr(g, err)
	}
	return convert(res, func(p mcpgateway.PromptInfo) web.PromptInfo {
		return web.PromptInfo{Name: p.Name, Description: p.Description, Arguments: convert(p.Arguments, func(a mcpgateway.PromptArgument) web.PromptArgument {
			return web.PromptArgument{Name: a.Name, Description: a.Description, Required: a.Required}
		})}
	}), nil
}

// GetPrompt implements web.ServerFeatures: one prompt of a server, filled.
func (a Servers) GetPrompt(ctx context.Context, name, prompt string, args map[string]string) ([]web.PromptMessage, error) {
	g, err := a.gateway(name)
	if err != nil {
		return nil, err
	}
	res, err := g.GetPrompt(forUser(ctx), prompt, args)
	if err != nil {
		return nil, gatewayErr(g, err)
	}
	return convert(res, func(m mcpgateway.PromptMessage) web.PromptMessage {
		return web.PromptMessage{Role: m.Role, Content: m.Content}
	}), nil
}

// Logs implements web.ServerFeatures: a server's last log messages the key
// may see: all of them for an admin key (and without keys), else only the
// key's user's (their calls on a shared session, their own session).
func (a Servers) Logs(ctx context.Context, name string) ([]web.LogEntry, error) {
	g, err := a.gateway(name)
	if err != nil {
		return nil, err
	}
	var logs []mcpgateway.LogEntry
	if p := web.Principal(ctx); p != web.AdminUser {
		logs = g.LogsFor(p)
	} else {
		logs = g.Logs()
	}
	return convert(logs, func(e mcpgateway.LogEntry) web.LogEntry {
		return web.LogEntry{Time: e.Time, Level: e.Level, Logger: e.Logger, Data: e.Data, User: e.User}
	}), nil
}

// convert maps in with f, nil to nil (which web sends as null, as before
// web had types of its own for these routes).
func convert[T, U any](in []T, f func(T) U) []U {
	if in == nil {
		return nil
	}
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}
