package mcpendpoint

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

// Names the endpoint gives its own tools.
const (
	searchTool = "search_tools"
	callTool   = "call_tool"
	askTool    = "ask"
	// signInTool stands for the tools of a server the user must sign in
	// to first (named like its tools: <prefix><separator>sign_in).
	signInTool = "sign_in"
	// routerTool is the one tool registered with mcp-go: every tools/call
	// is renamed to it before mcp-go looks the name up (beforeCallTool),
	// and the client's name travels in the request's _meta under nameKey.
	routerTool = "elysia.route"
	nameKey    = "dev.elysia/tool"
)

// pageSize is the most tools one tools/list page holds.
const pageSize = 1000

// mode returns the mode cat is listed in: auto resolved by its size.
func mode(ex mcpconfig.Expose, cat *catalog) string {
	if ex.Mode != mcpconfig.ExposeAuto {
		return ex.Mode
	}
	if cat != nil && len(cat.entries) > ex.MaxTools {
		return mcpconfig.ExposeSearch
	}
	return mcpconfig.ExposeTools
}

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
	start := pageStart(string(req.Params.Cursor), len(all))
	end := min(len(all), start+pageSize)
	res.Tools = all[start:end]
	res.NextCursor = ""
	if end < len(all) {
		res.NextCursor = mcp.Cursor(nextCursor(end))
	}
	if isModern(ctx) {
		res.SetCacheHints(e.listTTL(cat).Milliseconds(), mcp.CacheScopePrivate)
	}
}

// listTTL is how long a client may keep a tools/list made of cat (nil for
// the gateway tools): ListTTL, but no longer than until a catalogue that
// left a server out (down, slow, needing a sign-in) is built again, so
// the server shows as soon as it can.
func (e *Endpoint) listTTL(cat *catalog) time.Duration {
	if cat == nil || cat.retryAt.IsZero() {
		return e.opts.ListTTL
	}
	return max(0, min(e.opts.ListTTL, time.Until(cat.retryAt)))
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
func (e *Endpoint) listFor(ctx context.Context, user string) ([]mcp.Tool, *catalog) {
	ex := e.expose()
	var out []mcp.Tool
	var cat *catalog
	if ex.Mode == mcpconfig.ExposeGateways {
		for _, up := range e.src.Upstreams() {
			if t, ok := up.(tools.Tool); ok && up.Config().Enabled {
				out = append(out, gatewayTool(t))
			}
		}
	} else {
		cat = e.catalogFor(ctx, user, false)
		switch mode(ex, cat) {
		case mcpconfig.ExposeSearch:
			out = append(out, searchTools()...)
		default:
			out = append(out, cat.listed()...)
		}
	}
	if ex.Agent && e.opts.Agent != nil {
		out = append(out, askToolDef())
	}
	if out == nil {
		out = []mcp.Tool{}
	}
	return out, cat
}

// toolOf is en as listed: its schemas raw and its description and
// annotations as the server gave them.
func toolOf(en *entry) mcp.Tool {
	t := mcp.Tool{Name: en.name, Description: en.info.Description, RawInputSchema: en.info.InputSchema}
	if len(en.info.OutputSchema) > 0 {
		t.RawOutputSchema = en.info.OutputSchema
	}
	if len(en.info.Annotations) > 0 {
		_ = json.Unmarshal(en.info.Annotations, &t.Annotations) // a bad object leaves them out
	}
	return t
}

// gatewayTool is a gateway tool (mcp_<server>) as the tree has it.
func gatewayTool(t tools.Tool) mcp.Tool {
	props := map[string]any{}
	var required []string
	for _, in := range t.Inputs() {
		p := map[string]any{"type": in.Type, "description": in.Description}
		if in.Default != nil {
			p["default"] = in.Default
		}
		if len(in.Enum) > 0 {
			p["enum"] = in.Enum
		}
		props[in.Name] = p
		if in.Required {
			required = append(required, in.Name)
		}
	}
	schema := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		schema["required"] = required
	}
	raw, _ := json.Marshal(schema) // plain values: cannot fail
	return mcp.Tool{Name: t.Name(), Description: t.Description(), RawInputSchema: raw}
}

func searchTools() []mcp.Tool {
	return []mcp.Tool{
		{
			Name: searchTool,
			Description: "Find tools among every server of this service by words of their name or description. " +
				"Returns the best matches with their input schemas; call one with call_tool.",
			RawInputSchema: json.RawMessage(`{"type":"object","properties":{` +
				`"query":{"type":"string","description":"words to look for in tool names and descriptions"},` +
				`"server":{"type":"string","description":"only this server's tools"},` +
				`"limit":{"type":"integer","minimum":1,"maximum":50,"description":"most tools returned (default 10)"}},` +
				`"required":["query"]}`),
			Annotations: mcp.ToolAnnotation{ReadOnlyHint: mcp.ToBoolPtr(true)},
		},
		{
			Name:        callTool,
			Description: "Call a tool that search_tools found, by its name, with arguments matching its input schema.",
			RawInputSchema: json.RawMessage(`{"type":"object","properties":{` +
				`"name":{"type":"string","description":"the tool's name as search_tools gave it"},` +
				`"arguments":{"type":"object","description":"the tool's arguments"}},"required":["name"]}`),
		},
	}
}

func askToolDef() mcp.Tool {
	return mcp.Tool{
		Name: askTool,
		Description: "Ask Elysia's decision-tree agent a question: it chooses and calls the tools of this service's servers " +
			"itself and answers in text. Give conversation_id to go on with an earlier conversation.",
		RawInputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"question":{"type":"string","description":"the question or task"},` +
			`"conversation_id":{"type":"string","description":"an earlier conversation to continue"}},"required":["question"]}`),
	}
}
