package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/tmc/langchaingo/llms"

	"github.com/elysia-go/elysia/discovery"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web"
)

// runner is the web.Runner: the tree's Query with the configured model,
// counted for shutdown.
type runner struct {
	trees *tree.Manager
	model llms.Model
	runs  *runTracker
}

var (
	_ web.Runner             = runner{}
	_ web.Servers            = serversAPI{}
	_ web.InteractiveServers = serversAPI{}
	_ web.TextModel          = textModel{}
)

func (r runner) RunQuery(ctx context.Context, userID, convID, queryID, query string, emit func(tools.Envelope)) error {
	if !r.runs.begin() {
		return fmt.Errorf("%w: the service is shutting down", web.ErrUnavailable)
	}
	defer r.runs.end()
	return r.trees.Query(ctx, r.model, userID, convID, queryID, query, emit)
}

// textModel is the web.TextModel: the decision model asked for text.
type textModel struct{ m llms.Model }

func (t textModel) Complete(ctx context.Context, prompt string) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, t.m, prompt)
}

// serversAPI is the web.Servers view of the gateways: web never imports
// mcpgateway, so their values are copied into web's types here.
type serversAPI struct{ disc *discovery.Discovery }

func (a serversAPI) Servers(context.Context) (web.ServersStatus, error) {
	gws := a.disc.Gateways()
	st := web.ServersStatus{ConfigFile: a.disc.Path(), Servers: make([]web.ServerStatus, 0, len(gws))}
	for _, g := range gws {
		cfg := g.Config()
		gs, d := g.Status(), cfg.Display()
		st.Servers = append(st.Servers, web.ServerStatus{
			Name: gs.Name, ToolName: gs.ToolName, Transport: gs.Transport, Enabled: gs.Enabled,
			State: string(gs.State), ToolCount: gs.ToolCount, Tools: gs.Tools, LastError: gs.LastError,
			Circuit: web.Circuit{State: gs.Circuit.State, RetryAt: gs.Circuit.RetryAt},
			Calls:   gs.Calls, Failures: gs.Failures, RetryAt: gs.RetryAt, PID: gs.PID,
			Command: d.Command, Args: d.Args, Cwd: d.Cwd, URL: d.URL, Env: d.Env, Headers: d.Headers,
			Description: cfg.Description, Branch: cfg.Branch, Unresolved: cfg.Mask(cfg.Unresolved),
		})
	}
	if err := a.disc.ConfigError(); err != nil {
		st.ConfigError = err.Error()
	}
	return st, nil
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

func (a serversAPI) gateway(name string) (*mcpgateway.Gateway, error) {
	g, ok := a.disc.Gateway(name)
	if !ok {
		return nil, fmt.Errorf("no MCP server %q: %w", name, tree.ErrNotFound)
	}
	return g, nil
}

// List pages the server's tools.
func (a serversAPI) List(ctx context.Context, name string, q web.ListRequest) (web.ToolPage, error) {
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

// Execute runs one tool. The gateway logs the call; the request id and the
// key's user it logs come from ctx (requestMetaHandler).
func (a serversAPI) Execute(ctx context.Context, name, tool string, inputs map[string]any) (web.ExecuteResult, error) {
	return a.ExecuteWith(ctx, name, tool, inputs, nil)
}

// ExecuteWith runs one tool with a user who watches it (the panel's run):
// progress, warnings and the server's questions go to emit.
func (a serversAPI) ExecuteWith(ctx context.Context, name, tool string, inputs map[string]any, emit tools.Emitter) (web.ExecuteResult, error) {
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

// requestMetaHandler fills in the request metadata a log record leaves
// empty, from the record's ctx: a gateway called through the API (POST
// /api/servers/:name/execute) logs its call under request_id and user, but
// has only a ctx to know them by, in which web put the request id and the
// key's user. Records that carry their own values keep them.
type requestMetaHandler struct{ slog.Handler }

func (h requestMetaHandler) Handle(ctx context.Context, r slog.Record) error {
	requestID, user := web.RequestID(ctx), web.Principal(ctx)
	if requestID == "" && user == "" {
		return h.Handler.Handle(ctx, r)
	}
	// fill is the value an empty request_id or user attribute takes.
	fill := func(a slog.Attr) string {
		if a.Value.Kind() != slog.KindString || a.Value.String() != "" {
			return ""
		}
		switch a.Key {
		case "request_id":
			return requestID
		case "user":
			return user
		}
		return ""
	}
	missing := false
	r.Attrs(func(a slog.Attr) bool {
		missing = fill(a) != ""
		return !missing
	})
	if !missing {
		return h.Handler.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if v := fill(a); v != "" {
			a.Value = slog.StringValue(v)
		}
		out.AddAttrs(a)
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h requestMetaHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return requestMetaHandler{h.Handler.WithAttrs(as)}
}

func (h requestMetaHandler) WithGroup(name string) slog.Handler {
	return requestMetaHandler{h.Handler.WithGroup(name)}
}
