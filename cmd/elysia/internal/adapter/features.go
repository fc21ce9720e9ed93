package adapter

import (
	"context"

	"github.com/elysia-go/elysia/web"
)

var _ web.ServerFeatures = Servers{}

// Resources lists a server's resources and resource templates.
func (a Servers) Resources(ctx context.Context, name string) (any, error) {
	g, err := a.gateway(name)
	if err != nil {
		return nil, err
	}
	res, err := g.ListResources(forUser(ctx))
	if err != nil {
		return nil, gatewayErr(g, err)
	}
	return res, nil
}

// ReadResource reads one resource of a server.
func (a Servers) ReadResource(ctx context.Context, name, uri string) (any, error) {
	g, err := a.gateway(name)
	if err != nil {
		return nil, err
	}
	res, err := g.ReadResource(forUser(ctx), uri)
	if err != nil {
		return nil, gatewayErr(g, err)
	}
	return web.ExecuteResult{IsError: res.IsError, Content: res.Content, Structured: res.Structured}, nil
}

// Prompts lists a server's prompts.
func (a Servers) Prompts(ctx context.Context, name string) (any, error) {
	g, err := a.gateway(name)
	if err != nil {
		return nil, err
	}
	res, err := g.ListPrompts(forUser(ctx))
	if err != nil {
		return nil, gatewayErr(g, err)
	}
	return res, nil
}

// GetPrompt fills one prompt of a server.
func (a Servers) GetPrompt(ctx context.Context, name, prompt string, args map[string]string) (any, error) {
	g, err := a.gateway(name)
	if err != nil {
		return nil, err
	}
	res, err := g.GetPrompt(forUser(ctx), prompt, args)
	if err != nil {
		return nil, gatewayErr(g, err)
	}
	return res, nil
}

// Logs returns a server's last log messages the key may see: all of them
// for an admin key (and without keys), else only the key's user's (their
// calls on a shared session, their own session).
func (a Servers) Logs(ctx context.Context, name string) (any, error) {
	g, err := a.gateway(name)
	if err != nil {
		return nil, err
	}
	if p := web.Principal(ctx); p != web.AdminUser {
		return g.LogsFor(p), nil
	}
	return g.Logs(), nil
}
