package mcpendpoint

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpendpoint/internal/catalog"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

// Names the endpoint gives its own tools besides those it lists
// (catalog.SearchName, CallName, AskName and SignInName).
const (
	// routerTool is the one tool registered with mcp-go: every tools/call
	// is renamed to it before mcp-go looks the name up (beforeCallTool),
	// and the client's name travels in the request's _meta under nameKey.
	routerTool = "elysia.route"
	nameKey    = "dev.elysia/tool"
)

// DefaultListTTL is the ttlMs of a complete tools/list given to a
// 2026-07-28 client: how long it may list from its cache. Such a client
// gets no list_changed on a session, so this is how late it may see a
// change of the catalogue.
const DefaultListTTL = 30 * time.Second

// afterListTools replaces mcp-go's list (the router only) with what ctx's
// user may call, a page at a time; a 2026-07-28 client is told how long
// it may keep it (listTTL), for its user alone.
func (e *Endpoint) afterListTools(ctx context.Context, _ any, req *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
	all, cat := e.listFor(ctx, mcpgateway.UserFrom(ctx))
	res.Tools, res.NextCursor = catalog.PageOf(all, req.Params.Cursor)
	if isModern(ctx) {
		res.SetCacheHints(e.listTTL(cat).Milliseconds(), mcp.CacheScopePrivate)
	}
}

// listTTL is how long a client may keep a tools/list made of cat (nil for
// the gateway tools): ListTTL, but no longer than until a catalogue that
// left a server out (down, slow, needing a sign-in) is built again, so
// the server shows as soon as it can.
func (e *Endpoint) listTTL(cat *catalog.Catalog) time.Duration {
	if cat == nil || cat.RetryAt().IsZero() {
		return e.opts.ListTTL
	}
	return max(0, min(e.opts.ListTTL, time.Until(cat.RetryAt())))
}

// serverInfo is the endpoint's serverInfo as a 2026-07-28 result's _meta
// gives it.
func serverInfo(version string) []byte {
	b, _ := json.Marshal(mcp.Implementation{Name: serverName, Version: version}) // plain fields: cannot fail
	return b
}

// serverName is the endpoint's name as an MCP server.
const serverName = "elysia"

// listFor returns every tool user is listed, in order, and the catalogue
// they come from (nil in gateways mode).
func (e *Endpoint) listFor(ctx context.Context, user string) ([]mcp.Tool, *catalog.Catalog) {
	ex := e.expose()
	var out []mcp.Tool
	var cat *catalog.Catalog
	if ex.Mode == mcpconfig.ExposeGateways {
		for _, up := range e.src.Upstreams() {
			if t, ok := up.(tools.Tool); ok && up.Config().Enabled {
				out = append(out, catalog.GatewayTool(t))
			}
		}
	} else {
		cat = e.catalogFor(ctx, user, false)
		switch catalog.Mode(ex, cat) {
		case mcpconfig.ExposeSearch:
			out = append(out, catalog.SearchTools()...)
		default:
			out = append(out, cat.Listed()...)
		}
	}
	if ex.Agent && e.opts.Agent != nil {
		out = append(out, catalog.AskTool())
	}
	if out == nil {
		out = []mcp.Tool{}
	}
	return out, cat
}
