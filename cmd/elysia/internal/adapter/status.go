package adapter

import (
	"context"

	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/web"
)

// Status is a server's status on the wire, web.ServerStatus, from its
// configuration and a gateway's status snapshot (Gateway.Status, or
// StatusFor as one user sees it): the one type GET /api/servers, the
// event streams and `elysia mcp list` render from. Secrets are masked.
func Status(cfg mcpconfig.ServerConfig, gs mcpgateway.Status) web.ServerStatus {
	d := cfg.Display()
	return web.ServerStatus{
		Name: gs.Name, ToolName: gs.ToolName, Transport: gs.Transport, Enabled: gs.Enabled,
		State: string(gs.State), ToolCount: gs.ToolCount, Tools: gs.Tools, LastError: gs.LastError,
		Circuit: web.Circuit{State: gs.Circuit.State, RetryAt: gs.Circuit.RetryAt},
		Calls:   gs.Calls, Failures: gs.Failures, RetryAt: gs.RetryAt, PID: gs.PID, ProtocolVersion: gs.ProtocolVersion,
		MissingSecrets: gs.MissingSecrets, Pin: gs.Pin, ToolChanges: toolChanges(gs.ToolChanges, cfg.Mask), DiffersByUser: gs.DiffersByUser,
		Command: d.Command, Args: d.Args, Cwd: d.Cwd, URL: d.URL, Env: d.Env, Headers: d.Headers,
		Description: cfg.Description, Branch: cfg.Branch, Unresolved: cfg.Mask(cfg.Unresolved),
		Policy: gs.Policy, Serving: gs.Serving, Copies: copies(gs.Copies),
	}
}

// copies is a server's copies on the wire; nil for a server without.
func copies(cs []mcpgateway.CopyStatus) []web.ServerCopy {
	if len(cs) == 0 {
		return nil
	}
	out := make([]web.ServerCopy, len(cs))
	for i, c := range cs {
		out[i] = web.ServerCopy{Copy: c.Copy, Label: c.Label, Transport: c.Transport, Where: c.Where, State: string(c.State),
			Serving: c.Serving, Down: c.Down, DownSince: c.DownSince, Circuit: web.Circuit{State: c.Circuit.State, RetryAt: c.Circuit.RetryAt},
			Calls: c.Calls, Failures: c.Failures, LastError: c.LastErr}
	}
	return out
}

// Servers implements web.Servers: every server as nobody in particular
// sees it.
func (a Servers) Servers(ctx context.Context) (web.ServersStatus, error) {
	return a.status(func(g *mcpgateway.Gateway) mcpgateway.Status { return g.Status() }), nil
}

// ServersFor implements web.UserServers: every server as user sees it
// (Gateway.StatusFor: the state of user's own session, the secrets of
// theirs the server still needs).
func (a Servers) ServersFor(ctx context.Context, user string) (web.ServersStatus, error) {
	return a.status(func(g *mcpgateway.Gateway) mcpgateway.Status { return g.StatusFor(ctx, user) }), nil
}

// status lists every server with the status snapshot of.
func (a Servers) status(of func(*mcpgateway.Gateway) mcpgateway.Status) web.ServersStatus {
	gws := a.disc.Gateways()
	st := web.ServersStatus{ConfigFile: a.disc.Path(), Servers: make([]web.ServerStatus, 0, len(gws))}
	var renamed map[string]map[string]string
	if a.renamed != nil {
		renamed = a.renamed()
	}
	for _, g := range gws {
		s := Status(g.Config(), of(g))
		s.Renamed = renamed[s.Name]
		st.Servers = append(st.Servers, s)
	}
	if err := a.disc.ConfigError(); err != nil {
		st.ConfigError = err.Error()
	}
	return st
}
