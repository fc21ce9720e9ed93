package mcpgateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

// ToolInfo is one tool of the server as listed, after allow/deny.
type ToolInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// InputSchema is the tool's inputSchema exactly as the server sent it.
	InputSchema json.RawMessage `json:"inputs"`
	// OutputSchema is the tool's outputSchema, nil when the server gave none.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// Annotations is the tool's annotations object exactly as the server
	// sent it, nil when it gave none; the aggregate MCP endpoint passes it on.
	Annotations json.RawMessage `json:"-"`
	// TaskSupport is the tool's execution.taskSupport as the server
	// declared it: "required", "optional", or "" (forbidden, the default).
	TaskSupport string `json:"-"`

	// size is the bytes of its JSON plus a separator (toolSize), set once
	// when the listing is built; 0 when unknown.
	size int
	// encoded is its list object (see object) as tools.Marshal writes it,
	// set once when the listing is built; nil when unknown.
	encoded json.RawMessage
}

// object is ti as the list action shows it: a map, so that the
// environment tags it with its _REF_ID.
func (ti ToolInfo) object() map[string]any {
	o := map[string]any{"name": ti.Name, "description": ti.Description, "inputs": ti.InputSchema}
	if ti.OutputSchema != nil {
		o["output_schema"] = ti.OutputSchema
	}
	return o
}

// toolSet is one listing: immutable once built, replaced as a whole.
type toolSet struct {
	infos  []ToolInfo
	names  []string
	schema map[string]*tools.Schema // by tool name; compile errors kept inside
	// retry holds the tools annotated readOnlyHint or idempotentHint true:
	// an execute of one of them is retried once on a transport failure.
	retry map[string]bool
	// task holds the tools the server runs only as tasks
	// (execution.taskSupport "required"); see callTask.
	task map[string]bool
	// headed holds the input schemas of the tools that mark parameters
	// x-mcp-header, by name: their calls mirror them into headers.
	headed map[string]json.RawMessage
	// description is the gateway's description with these tools' names.
	description string
	// copy is the index of the copy the tools were listed on.
	copy int
	// sess is the session the tools were listed on, and changes the count
	// of list_changed notifications when the listing started: the set is
	// fresh only while both are still current (view.freshLocked).
	sess    *session.Session
	changes uint64
	// held are the tools left out because their definitions are not the
	// pinned ones, by name (pins.go). pinGen is the gateway's count of
	// approvals when the listing started; pinRecheck, when not zero, is
	// when a listing that holds tools back goes stale.
	held       map[string]ToolChange
	pinGen     uint64
	pinRecheck time.Time
}

// List returns the server's tools (after allow/deny), from the cache when it
// is fresh, else by listing them, connecting first if needed. The returned
// slice is shared: callers must not modify it.
func (g *Gateway) List(ctx context.Context) ([]ToolInfo, error) {
	if err := g.enter("list"); err != nil {
		return nil, err
	}
	defer g.leave()
	ts, err := g.tools(ctx)
	if err != nil {
		return nil, err
	}
	return ts.infos, nil
}

// freshLocked reports whether ts may be served without asking the server:
// it was listed on the live session and no list_changed came since its
// listing started. v.mu is held.
func (v *view) freshLocked(ts *toolSet) bool {
	return ts != nil && ts.changes == v.changes && ts.sess != nil && ts.copy == v.listCopy() &&
		ts.sess == v.conns[ts.copy].Current() && !v.g.pinsStale(ts)
}

// maxRelists bounds how often tools lists again because list_changed arrived
// while it was listing, so a server that announces changes without end
// cannot keep a caller forever.
const maxRelists = 3

// tools returns the cached tool set, refreshing it when stale. Concurrent
// callers share one listing. A list_changed that arrives while a listing is
// in flight makes that listing stale at once, so another one follows.
func (g *Gateway) tools(ctx context.Context) (*toolSet, error) {
	return routed(ctx, g, func(v *view) (*toolSet, error) { return v.toolsHere(ctx) })
}

// toolsHere is tools on v's own conns: listed on the copy that serves v
// (listCopy); when that copy fails, on the next copy in the order calls
// take (order), each tried once.
func (v *view) toolsHere(ctx context.Context) (*toolSet, error) {
	var fails []copyFailure
	at := v.listCopy()
	for relists := 0; ; {
		if err := v.listOnce(ctx, at); err != nil {
			if errors.Is(err, context.Canceled) && ctx.Err() == nil && v.conns[0].Lifetime().Err() == nil {
				continue // another caller's listing was cancelled; ours goes on
			}
			if !v.g.multi() || !failoverErr(ctx, err) {
				return nil, err
			}
			c := v.g.copies[at]
			v.g.markDown(c, err)
			fails = append(fails, copyFailure{c, err})
			next := v.untried(fails)
			if next < 0 {
				return nil, v.g.failedOver(ctx, fails)
			}
			at = next
			continue
		}
		v.mu.Lock()
		ts := v.cache
		fresh := v.freshLocked(ts)
		v.mu.Unlock()
		if ts != nil && (fresh || relists >= maxRelists) {
			return ts, nil
		}
		relists++
		at = v.listCopy()
	}
}

// untried returns the first copy in the order calls take that fails does
// not name, or -1.
func (v *view) untried(fails []copyFailure) int {
	for _, c := range v.g.order(v) {
		if !slices.ContainsFunc(fails, func(f copyFailure) bool { return f.copy == c }) {
			return c.index
		}
	}
	return -1
}

// fetchTools lists the tools on the current session and publishes them,
// tagged with the session and with changes, the list_changed count when the
// listing started. It runs on the first caller's goroutine, bounded by that
// caller's ctx and the call timeout; waiters whose ctx is still alive retry
// if it fails on ctx.
func (v *view) fetchTools(ctx context.Context, f *listFlight, changes uint64, at int) {
	var ts *toolSet
	conn := v.conns[at]
	s, err := conn.Session(ctx)
	if err == nil {
		_, timeout := v.cfg.Timeouts()
		cctx, cancel := conn.CallCtx(ctx, timeout)
		var raw []session.RawTool
		stop := s.WedgeGuard(cctx, "list")
		raw, err = conn.ListTools(cctx, s)
		stop()
		timedOut := cctx.Err() == context.DeadlineExceeded && ctx.Err() == nil
		cancel()
		if err != nil {
			if session.IsSessionGone(err) {
				s.MarkDead(err)
				err = s.Cause(err)
				conn.Retire(s)
			}
			if timedOut && !errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("%w (%w)", err, context.DeadlineExceeded)
			}
			if timedOut {
				err = fmt.Errorf("no answer within call_timeout %v: %w", timeout, err)
			}
			err = conn.CallErr(ctx, "list", err)
		} else {
			var held map[string]ToolChange
			v.g.pins.mu.Lock()
			gen := v.g.pins.gen
			v.g.pins.mu.Unlock()
			if v.pinning() {
				held = v.checkPins(ctx, raw)
			}
			ts = v.buildToolSet(raw, held)
			ts.pinGen = gen
			if len(held) > 0 {
				ts.pinRecheck = time.Now().Add(pinRecheck)
			}
			ts.description = describe(v.cfg, ts.names, s.Offers())
			ts.sess, ts.copy = s, at
			ts.changes = changes
		}
	}
	v.mu.Lock()
	v.listing = nil
	var prev *toolSet
	if ts != nil {
		prev = v.cache
		v.cache = ts
	}
	v.mu.Unlock()
	if ts != nil {
		v.g.markUp(v.g.copies[at]) // it answered
	}
	if ts != nil && ts.description != "" {
		v.g.setDescription(ts.description)
	}
	if ts != nil && prev != nil && prev.copy != ts.copy {
		v.logCopyDifference(prev, ts)
	}
	if ts != nil && (prev == nil || !slices.Equal(prev.names, ts.names)) {
		if o, ok := v.g.opts.Observer.(ToolsObserver); ok {
			o.ObserveTools(v.cfg.Name)
		}
	}
	f.err = err
	close(f.done)
}

// logCopyDifference logs how the tools of ts, listed on one copy, differ
// from those of prev, listed on another: the serving copy's list is the one
// used, never a union.
func (v *view) logCopyDifference(prev, ts *toolSet) {
	var gone, added []string
	for _, n := range prev.names {
		if _, ok := ts.schema[n]; !ok {
			gone = append(gone, n)
		}
	}
	for _, n := range ts.names {
		if _, ok := prev.schema[n]; !ok {
			added = append(added, n)
		}
	}
	if len(gone) == 0 && len(added) == 0 {
		return
	}
	v.logger.Warn("copies list different tools: the serving copy's list is used",
		"from", mcpconfig.CopyLabel(prev.copy), "to", mcpconfig.CopyLabel(ts.copy), "missing", gone, "extra", added)
}

// buildToolSet filters raw by allow/deny, leaves out the tools held back
// (held, by name: see checkPins) and compiles each input schema once.
func (v *view) buildToolSet(raw []session.RawTool, held map[string]ToolChange) *toolSet {
	ts := &toolSet{schema: make(map[string]*tools.Schema, len(raw)), retry: map[string]bool{}, task: map[string]bool{}, held: held}
	for _, rt := range raw {
		if rt.Name == "" || !v.allowed(rt.Name) {
			continue
		}
		if _, ok := held[rt.Name]; ok {
			continue
		}
		if _, dup := ts.schema[rt.Name]; dup {
			continue
		}
		// What the model and /mcp's clients read, without the text a
		// person reading it cannot see (tools.CleanDescription).
		desc, hidden := tools.CleanDescription(rt.Description)
		if hidden > 0 {
			v.logger.Warn("tool description held hidden text: removed before the model or a client sees it",
				logKeyTool, rt.Name, "removed_chars", hidden)
		}
		info := ToolInfo{Name: rt.Name, Description: desc, InputSchema: rt.InputSchema}
		if len(info.InputSchema) == 0 || string(info.InputSchema) == "null" {
			info.InputSchema = json.RawMessage(`{"type":"object"}`)
		}
		if len(rt.OutputSchema) > 0 && string(rt.OutputSchema) != "null" {
			info.OutputSchema = rt.OutputSchema
		}
		if len(rt.Annotations) > 0 && string(rt.Annotations) != "null" {
			info.Annotations = rt.Annotations
		}
		info.TaskSupport = string(rt.Execution.TaskSupport)
		if session.ParamHeaders(info.InputSchema) {
			if ts.headed == nil {
				ts.headed = map[string]json.RawMessage{}
			}
			ts.headed[rt.Name] = info.InputSchema
		}
		sch, err := tools.CompileSchema(info.InputSchema)
		if err != nil {
			v.logger.Warn("tool has an invalid input schema", logKeyTool, rt.Name, logKeyErr, err)
		}
		ts.schema[rt.Name] = sch
		if rt.Execution.TaskSupport == mcp.TaskSupportRequired {
			ts.task[rt.Name] = true
		}
		if rt.SafeToRetry() {
			ts.retry[rt.Name] = true
		}
		if b, err := tools.Marshal(info.object()); err == nil { // the schemas are JSON: it cannot fail
			info.encoded, info.size = b, len(b)+1
		}
		ts.infos = append(ts.infos, info)
		ts.names = append(ts.names, rt.Name)
	}
	return ts
}

// allowed applies cfg.Allow and cfg.Deny (path.Match globs; deny wins).
func (v *view) allowed(name string) bool {
	for _, p := range v.cfg.Deny {
		if ok, _ := path.Match(p, name); ok {
			return false
		}
	}
	if len(v.cfg.Allow) == 0 {
		return true
	}
	for _, p := range v.cfg.Allow {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// ListTools returns one page of the server's tools (after allow/deny) that
// q selects, best matches first when q has a query. It lists as the list
// action does: from the cache when fresh, else from the server; while the
// server cannot be used it pages the last listing and says so (Stale). Only
// without any listing is the failure returned; a bad cursor is an error
// matching ErrBadCursor.
func (g *Gateway) ListTools(ctx context.Context, q ListQuery) (ListPage, error) {
	if err := g.enter("list"); err != nil {
		return ListPage{}, err
	}
	defer g.leave()
	ts, why, err := g.listed(ctx)
	if err != nil {
		return ListPage{}, err
	}
	p, err := page(selectTools(ts.infos, q.Query), q, g.opts.OutputCap)
	if err != nil {
		return ListPage{}, err
	}
	if why != nil {
		p.Stale, p.LastError = true, g.maskFor(ctx, why.Error())
	}
	return p, nil
}

// listed returns the tools a list answers with. It asks the circuit like
// execute does, and counts a failed listing as execute counts a failed call.
// While the server cannot be used (circuit open, back-off, unreachable, no
// answer in time) it returns the cache with why it is stale; only without a
// cache is the failure returned.
func (g *Gateway) listed(ctx context.Context) (ts *toolSet, stale, err error) {
	ts, fresh := g.shared.current()
	if fresh {
		return ts, nil, nil
	}
	// The circuit asked is the only copy's; a server with copies lists
	// on the copy that serves (toolsHere), which is one whose circuit
	// is not open.
	var done func(error)
	if cs := g.circuit(); cs.State == CircuitOpen {
		err = g.circuitErr(cs)
	} else if !g.multi() {
		done, err = g.allow(g.copies[0])
	}
	if err == nil {
		ts, err = g.tools(ctx)
		o := outcomeSuccess
		if err != nil {
			o = g.classify(ctx, err)
		}
		if !g.multi() {
			g.attempt(g.copies[0], o, done)
		}
		g.count(o)
		if err == nil {
			return ts, nil, nil
		}
		if o != outcomeTransport && o != outcomeTimeout {
			return nil, nil, err
		}
		done = func(error) {} // counted
	}
	cached := g.shared.cached()
	if cached == nil {
		if done == nil {
			g.count(outcomeRefused)
		}
		return nil, nil, err
	}
	return cached, err, nil
}

// listAction is the list action: the tools query selects, best matches
// first, capped at OutputCap bytes with a note saying how many were left
// out; marked stale, with the server's state and why, when they come from
// the cache of a server that cannot be used.
func (g *Gateway) listAction(ctx context.Context, query string) (tools.Result, error) {
	ts, why, err := g.listed(ctx)
	if err != nil {
		return tools.Result{}, err
	}
	sel := selectTools(ts.infos, query)
	p, _ := page(sel, ListQuery{}, g.opts.OutputCap) // no cursor: cannot fail
	res := g.listResult(p.Tools)
	if query != "" {
		res.Metadata["query"] = query
		res.Metadata["matches"] = len(sel)
	}
	if left := len(sel) - len(p.Tools); left > 0 {
		res.Metadata["omitted"] = left
		res.Metadata["note"] = fmt.Sprintf("%d of %d tools left out to stay within %d bytes; list again with a query to find a tool by name or description",
			left, len(sel), g.opts.OutputCap)
	}
	if why != nil {
		res.Metadata["stale"] = true
		res.Metadata["last_error"] = g.maskFor(ctx, why.Error())
	}
	return res, nil
}

// cached returns the last listing, or nil.
func (v *view) cached() *toolSet {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.cache
}

// listResult is the tools.Result of the list action.
func (g *Gateway) listResult(infos []ToolInfo) tools.Result {
	objs := make([]map[string]any, 0, len(infos))
	encoded := make([]json.RawMessage, 0, len(infos))
	for _, ti := range infos {
		objs = append(objs, ti.object())
		encoded = append(encoded, ti.encoded)
	}
	st := g.Status()
	circuit := map[string]any{"state": st.Circuit.State}
	if st.Circuit.RetryAt != nil {
		circuit["retry_at"] = st.Circuit.RetryAt.Format(time.RFC3339)
	}
	return tools.Result{
		Name:        "list",
		Type:        "table",
		Objects:     objs,
		ObjectsJSON: encoded,
		Metadata:    map[string]any{"server": g.cfg.Name, "action": "list", "state": string(st.State), "circuit": circuit},
	}
}

// listFlight is a listing shared by concurrent callers: they wait for
// done, then read err (written before done is closed).
type listFlight struct {
	done chan struct{}
	err  error
}
