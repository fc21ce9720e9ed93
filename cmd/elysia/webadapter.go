package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/elysia-go/elysia/discovery"
	"github.com/elysia-go/elysia/llm"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/store"
	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web"
)

// service joins the tree manager, the store, discovery and the model into
// the small interfaces the web package declares.
type service struct {
	trees *tree.Manager
	store *store.Store // nil: memory only
	disc  *discovery.Discovery
	model llms.Model
	info  llm.Info
	// queryWait bounds how long a query waits for the conversation's lock.
	queryWait time.Duration
	// runs counts the queries in flight, for shutdown.
	runs *runTracker
}

var (
	_ web.Trees         = (*service)(nil)
	_ web.Catalog       = (*service)(nil)
	_ web.Runner        = (*service)(nil)
	_ web.Conversations = (*service)(nil)
	_ web.Users         = (*service)(nil)
	_ web.Servers       = serversAPI{}
)

// webErr maps the tree package's sentinels onto the web package's, keeping
// the message.
func webErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, tree.ErrBusy):
		return categorized{web.ErrBusy, err}
	case errors.Is(err, tree.ErrNotFound), errors.Is(err, store.ErrNotFound):
		return categorized{web.ErrNotFound, err}
	case errors.Is(err, tree.ErrInvalid), errors.Is(err, tree.ErrExists):
		return categorized{web.ErrInvalidInput, err}
	}
	return err
}

// categorized puts err in one of web's categories (which picks the
// status code) without changing its message: err already says "not
// found" or "already exists", so a "not found: " prefix would say it twice.
type categorized struct{ category, err error }

func (c categorized) Error() string   { return c.err.Error() }
func (c categorized) Unwrap() []error { return []error{c.category, c.err} }

// marshalTree renders a tree's JSON. It calls MarshalJSON directly:
// json.Marshal would validate and compact the already valid output again.
func marshalTree(t *tree.Tree) (json.RawMessage, error) {
	return t.MarshalJSON()
}

func (s *service) TreeJSON(ctx context.Context, userID, convID string) (json.RawMessage, error) {
	c, err := s.trees.Conversation(ctx, userID, convID)
	if err != nil {
		return nil, webErr(err)
	}
	return marshalTree(c.Tree())
}

func (s *service) InitTree(ctx context.Context, userID, convID, mode string) (json.RawMessage, error) {
	m, err := tree.ParseInitMode(mode)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", web.ErrInvalidInput, err)
	}
	c, err := s.trees.InitConversation(ctx, userID, convID, m)
	if err != nil {
		return nil, webErr(err)
	}
	return marshalTree(c.Tree())
}

var opKinds = map[web.TreeOpKind]tree.OpKind{
	web.OpAddTool:      tree.OpAddTool,
	web.OpRemoveTool:   tree.OpRemoveTool,
	web.OpAddBranch:    tree.OpAddBranch,
	web.OpRemoveBranch: tree.OpRemoveBranch,
}

// ApplyOp applies op to one conversation, or, without a conversation id, to
// every conversation of the user and to the ones the user creates later
// (Elysia's per-user tool changes), returning the tree a new conversation of
// the user gets.
func (s *service) ApplyOp(ctx context.Context, userID string, op web.TreeOp) (json.RawMessage, error) {
	kind, ok := opKinds[op.Kind]
	if !ok {
		return nil, fmt.Errorf("%w: unknown tree operation %q", web.ErrInvalidInput, op.Kind)
	}
	top := tree.Op{
		Kind: kind, ToolName: op.ToolName, BranchID: op.BranchID, FromToolIDs: op.FromToolIDs,
		Root: op.Root, Description: op.Description, Instruction: op.Instruction, FromBranchID: op.FromBranchID,
		Status: op.Status,
	}
	if kind == tree.OpAddBranch || kind == tree.OpRemoveBranch {
		if op.ID != "" {
			top.BranchID = op.ID
		}
	}
	if op.ConversationID == "" {
		t, err := s.trees.ApplyUser(ctx, userID, top)
		if err != nil {
			return nil, webErr(err)
		}
		return marshalTree(t)
	}
	t, err := s.trees.Apply(ctx, userID, op.ConversationID, top)
	if err != nil {
		return nil, webErr(err)
	}
	return marshalTree(t)
}

// AvailableTools returns {"<name>": <tool info>, ...} in the Manager's
// order (the built-ins, then the gateways as configured), which a map
// would lose.
func (s *service) AvailableTools(context.Context) (any, error) {
	infos := s.trees.AvailableTools()
	out := make(tools.Object, len(infos))
	for i, ti := range infos {
		out[i] = tools.Member{Key: ti.Name, Value: ti}
	}
	return out, nil
}

// RunQuery runs one query. With a shared database the conversation is also
// locked across replicas for the run.
func (s *service) RunQuery(ctx context.Context, userID, convID, queryID, query string, emit func(tools.Envelope)) error {
	if !s.runs.begin() {
		return fmt.Errorf("%w: the service is shutting down", web.ErrUnavailable)
	}
	defer s.runs.end()
	if s.store != nil {
		lockCtx, cancel := context.WithTimeout(ctx, s.queryWait)
		unlock, err := s.store.Lock(lockCtx, userID, convID)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%w: conversation %q is busy with another query: %w", web.ErrBusy, convID, err)
		}
		defer unlock()
		s.trees.Forget(userID, convID) // reload what another replica may have saved
	}
	c, err := s.trees.Conversation(ctx, userID, convID)
	if err != nil {
		return webErr(err)
	}
	return webErr(c.Run(ctx, s.model, query, queryID, emit))
}

func (s *service) List(ctx context.Context, userID string) (any, error) {
	list, err := s.trees.Conversations(ctx, userID)
	if err != nil {
		return nil, webErr(err)
	}
	out := make([]conversationEntry, len(list))
	for i, c := range list {
		out[i] = conversationEntry{ConversationID: c.ConversationID, Title: c.Title, UpdatedAt: wireTime(c.UpdatedAt)}
	}
	return out, nil
}

// conversationEntry is one element of GET /conversations/:user.
type conversationEntry struct {
	ConversationID string `json:"conversation_id"`
	Title          string `json:"title"`
	UpdatedAt      string `json:"updated_at"`
}

// wireTime formats t as DESIGN.md's examples do, RFC 3339 in UTC to the
// second ("2026-11-22T10:00:00Z"): the same instant reads the same whether
// it comes from memory (nanoseconds) or the store (microseconds). The zero
// time, a conversation never saved, is "".
func wireTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// savedConversation is the body of GET /conversations/:user/:conv.
type savedConversation struct {
	ConversationID string              `json:"conversation_id"`
	Title          string              `json:"title"`
	InitMode       string              `json:"init_mode"`
	History        []tree.Message      `json:"history"`
	Tree           json.RawMessage     `json:"tree"`
	Events         []json.RawMessage   `json:"events"`
	UpdatedAt      string              `json:"updated_at"`
	Environment    any                 `json:"environment"`
	Queries        []map[string]string `json:"queries"`
}

func (s *service) Get(ctx context.Context, userID, convID string) (any, error) {
	if s.store != nil {
		s.trees.Forget(userID, convID) // read what any replica saved last
	}
	c, ok, err := s.trees.Existing(ctx, userID, convID)
	if err != nil {
		return nil, webErr(err)
	}
	if !ok {
		return nil, fmt.Errorf("%w: conversation %q of user %q", web.ErrNotFound, convID, userID)
	}
	st := c.State()
	out := savedConversation{
		ConversationID: convID, Title: st.Title, InitMode: string(st.InitMode),
		History: nonNil(st.History), UpdatedAt: wireTime(st.UpdatedAt), Environment: st.Environment,
		Events: []json.RawMessage{}, Queries: []map[string]string{},
	}
	if out.Tree, err = marshalTree(c.Tree()); err != nil {
		return nil, err
	}
	if s.store != nil {
		evs, err := s.store.Events(ctx, userID, convID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		for _, e := range evs {
			out.Events = append(out.Events, e.Envelope)
		}
	}
	return out, nil
}

func (s *service) Delete(ctx context.Context, userID, convID string) error {
	return webErr(s.trees.Delete(ctx, userID, convID))
}

func (s *service) InitUser(ctx context.Context, userID string) (bool, any, error) {
	existed := false
	if s.store != nil {
		var err error
		if existed, err = s.store.EnsureUser(ctx, userID); err != nil {
			return false, nil, err
		}
	}
	cfg := map[string]any{
		"model":                 s.info,
		"branch_initialisation": string(tree.OneBranch),
		"config_file":           s.disc.Path(),
	}
	return existed, cfg, nil
}

// serverEntry is one server of GET /api/servers: the gateway's status plus
// its configuration as written, with secrets masked.
type serverEntry struct {
	mcpgateway.Status
	mcpgateway.DisplayConfig
	Description string `json:"description,omitempty"`
	Branch      string `json:"branch,omitempty"`
	Unresolved  string `json:"unresolved,omitempty"`
}

// serversAPI is the web.Servers view of the service (its List lists a
// server's tools, not a user's conversations).
type serversAPI struct{ s *service }

func (a serversAPI) Servers(context.Context) (web.ServersStatus, error) {
	s := a.s
	gws := s.disc.Gateways()
	entries := make([]serverEntry, 0, len(gws))
	for _, g := range gws {
		cfg := g.Config()
		entries = append(entries, serverEntry{
			Status: g.Status(), DisplayConfig: cfg.Display(), Description: cfg.Description,
			Branch: cfg.Branch, Unresolved: cfg.Mask(cfg.Unresolved),
		})
	}
	st := web.ServersStatus{ConfigFile: s.disc.Path(), Servers: entries}
	if err := s.disc.ConfigError(); err != nil {
		st.ConfigError = err.Error()
	}
	return st, nil
}

func (s *service) gateway(name string) (*mcpgateway.Gateway, error) {
	g, ok := s.disc.Gateway(name)
	if !ok {
		return nil, fmt.Errorf("%w: no MCP server %q", web.ErrNotFound, name)
	}
	return g, nil
}

// List pages the server's tools. The body is the page as the gateway gives
// it, with the server's name: {"server", "tools", "total", "next_cursor"},
// plus "stale" and "last_error" when it comes from the cache of a server
// that cannot be used.
func (a serversAPI) List(ctx context.Context, name string, q web.ListRequest) (any, error) {
	g, err := a.s.gateway(name)
	if err != nil {
		return nil, err
	}
	page, err := g.ListTools(ctx, mcpgateway.ListQuery{Query: q.Query, Cursor: q.Cursor})
	if errors.Is(err, mcpgateway.ErrBadCursor) {
		return nil, categorized{web.ErrInvalidInput, err}
	}
	if err != nil {
		return nil, gatewayErr(g, err)
	}
	return struct {
		Server string `json:"server"`
		mcpgateway.ListPage
	}{g.Config().Name, page}, nil
}

// Execute runs one tool. The gateway logs the call; the request id and the
// key's user it logs come from ctx (requestMetaHandler).
func (a serversAPI) Execute(ctx context.Context, name, tool string, inputs map[string]any) (any, error) {
	g, err := a.s.gateway(name)
	if err != nil {
		return nil, err
	}
	res, err := g.Execute(ctx, tool, inputs)
	if err != nil {
		return nil, gatewayErr(g, err)
	}
	return res, nil
}

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
