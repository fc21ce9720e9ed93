package adapter

import (
	"context"
	"errors"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/elysia-go/elysia/discovery"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web"
	"github.com/elysia-go/elysia/web/stream"
)

// Runner is the stream.Runner: the tree's Query with the configured model,
// counted for shutdown.
type Runner struct {
	// Trees runs the queries.
	Trees *tree.Manager
	// Model makes the decisions.
	Model llms.Model
	// Runs counts the queries in flight, for shutdown.
	Runs RunGate
}

// RunGate counts the queries in flight so that shutdown can wait for them.
// Safe for concurrent use.
type RunGate interface {
	// Begin registers a query; false means the service is shutting down.
	Begin() bool
	// End unregisters a query that Begin registered.
	End()
}

var (
	_ stream.Runner          = Runner{}
	_ web.Servers            = Servers{}
	_ web.InteractiveServers = Servers{}
	_ web.TextModel          = TextModel{}
)

// RunQuery implements stream.Runner; once the service shuts down (Runs.Begin
// refuses) a query fails with web.ErrUnavailable.
func (r Runner) RunQuery(ctx context.Context, userID, convID, queryID, query string, emit func(tools.Envelope)) error {
	if !r.Runs.Begin() {
		return fmt.Errorf("%w: the service is shutting down", web.ErrUnavailable)
	}
	defer r.Runs.End()
	return r.Trees.Query(ctx, r.Model, userID, convID, queryID, query, emit)
}

// TextModel is the web.TextModel: the decision model asked for text.
type TextModel struct{ Model llms.Model }

// Complete implements web.TextModel.
func (t TextModel) Complete(ctx context.Context, prompt string) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, t.Model, prompt)
}

// Servers is the web.Servers view of the gateways: web never imports
// mcpgateway, so their values are copied into web's types here.
type Servers struct {
	disc *discovery.Discovery
	// renamed, when set, gives the tools the aggregate MCP endpoint lists
	// under another name, by server.
	renamed func() map[string]map[string]string
}

// NewServers returns the Servers of d's gateways; renamed, when not nil,
// gives the tools the aggregate MCP endpoint lists under another name, by
// server, for GET /api/servers.
func NewServers(d *discovery.Discovery, renamed func() map[string]map[string]string) Servers {
	return Servers{disc: d, renamed: renamed}
}

// forUser names the key's user as the one asking, so a server that keeps a
// session per user (sign-in, ${user:NAME}) serves that user's own. An
// admin key or a keyless service names nobody.
func forUser(ctx context.Context) context.Context {
	if p := web.Principal(ctx); p != "" && p != web.AdminUser {
		return mcpgateway.WithUser(ctx, p)
	}
	return ctx
}

// gateway returns the gateway named name (a server's or its tool's name).
func (a Servers) gateway(name string) (*mcpgateway.Gateway, error) {
	g, ok := a.disc.Gateway(name)
	if !ok {
		return nil, fmt.Errorf("no MCP server %q: %w", name, tree.ErrNotFound)
	}
	return g, nil
}

// List pages the server's tools.
func (a Servers) List(ctx context.Context, name string, q web.ListRequest) (web.ToolPage, error) {
	g, err := a.gateway(name)
	if err != nil {
		return web.ToolPage{}, err
	}
	page, err := g.ListTools(forUser(ctx), mcpgateway.ListQuery{Query: q.Query, Cursor: q.Cursor})
	if errors.Is(err, mcpgateway.ErrBadCursor) {
		return web.ToolPage{}, categorized{tools.ErrInvalidArguments, err}
	}
	if err != nil {
		return web.ToolPage{}, gatewayErr(g, err)
	}
	out := web.ToolPage{Server: g.Config().Name, Tools: make([]web.ToolInfo, len(page.Tools)), Total: page.Total,
		NextCursor: page.NextCursor, Stale: page.Stale, LastError: page.LastError}
	for i, t := range page.Tools {
		out.Tools[i] = web.ToolInfo{Name: t.Name, Description: t.Description, Inputs: t.InputSchema, OutputSchema: t.OutputSchema}
	}
	return out, nil
}

// Execute implements web.Servers: it runs one tool. The gateway logs the
// call; the request id and the key's user it logs come from ctx (the
// request-metadata log handler in cmd/elysia).
func (a Servers) Execute(ctx context.Context, name, tool string, inputs map[string]any) (web.ExecuteResult, error) {
	return a.ExecuteWith(ctx, name, tool, inputs, nil)
}

// ExecuteWith implements web.InteractiveServers: it runs one tool with a
// user who watches it (the panel's run): progress, warnings and the
// server's questions go to emit.
func (a Servers) ExecuteWith(ctx context.Context, name, tool string, inputs map[string]any, emit tools.Emitter) (web.ExecuteResult, error) {
	g, err := a.gateway(name)
	if err != nil {
		return web.ExecuteResult{}, err
	}
	res, err := g.ExecuteWith(forUser(ctx), tool, inputs, emit)
	if err != nil {
		return web.ExecuteResult{}, gatewayErr(g, err)
	}
	return web.ExecuteResult{IsError: res.IsError, Content: res.Content, Structured: res.Structured}, nil
}

// categorized puts err in a category (which picks web's status code)
// without changing its message.
type categorized struct{ category, err error }

func (c categorized) Error() string   { return c.err.Error() }
func (c categorized) Unwrap() []error { return []error{c.category, c.err} }

// gatewayErr makes a gateway's error what web.Servers asks for: a message
// that names the server, with its secrets masked, since web shows it even
// on a 502 or 503. A "cannot be used right now" error (disabled, unresolved
// config, back-off, open circuit) also matches web.ErrUnavailable (503);
// other failures of the server stay 502. The error still matches what err
// matched, and an open circuit's RetryAt stays reachable with errors.As.
func gatewayErr(g *mcpgateway.Gateway, err error) error {
	if errors.Is(err, tools.ErrInvalidArguments) || errors.Is(err, tools.ErrUnknownTool) {
		return err // a 422 whose text DESIGN.md shows as it is
	}
	cfg := g.Config()
	msg := err.Error()
	if _, ok := errors.AsType[*mcpgateway.ServerError](err); !ok && !errors.Is(err, mcpgateway.ErrCircuitOpen) {
		msg = fmt.Sprintf("server %q: %s", cfg.Name, msg)
	}
	out := error(&serverFailure{msg: cfg.Mask(msg), err: err})
	if errors.Is(err, mcpgateway.ErrUnavailable) {
		out = categorized{web.ErrUnavailable, out}
	}
	return out
}

// serverFailure is a gateway's error with the message web shows.
type serverFailure struct {
	msg string
	err error
}

func (e *serverFailure) Error() string { return e.msg }
func (e *serverFailure) Unwrap() error { return e.err }
