package mcpgateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/internal/textdist"
	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
	"github.com/elysia-go/elysia/tools"
)

// CallResult is the outcome of one tools/call, in the shape of the
// POST /api/servers/:name/execute body: content items as maps (text, image
// {mime_type, data}, audio, resource, resource_link), capped at OutputCap.
type CallResult struct {
	IsError    bool             `json:"is_error"`
	Content    []map[string]any `json:"content"`
	Structured any              `json:"structured"`

	// llmText is the text the model sees, capped, with a note on what was cut.
	llmText string
}

// Text returns what the model sees of the result: every text item, a line per
// image, audio or resource, and the structured content, capped at OutputCap
// with a note saying what was cut.
func (r *CallResult) Text() string { return r.llmText }

// Execute calls tool with inputs. The inputs are validated against the
// tool's input schema before anything is sent: a failure is an
// *tools.ArgumentError (errors.As), an unknown tool an error matching
// tools.ErrUnknownTool (errors.Is). An isError result is a *CallResult with
// IsError set and a nil error. The call is bounded by the server's
// call_timeout; cancelling ctx cancels it on the server.
func (g *Gateway) Execute(ctx context.Context, tool string, inputs map[string]any) (*CallResult, error) {
	return g.ExecuteWith(ctx, tool, inputs, nil)
}

// ExecuteWith is Execute with emit receiving what the server says during
// the call: progress as status events, questions through emit's
// tools.Asker when it has one (else they are declined), warnings. A nil
// emit is Execute.
func (g *Gateway) ExecuteWith(ctx context.Context, tool string, inputs map[string]any, emit tools.Emitter) (*CallResult, error) {
	if err := g.enter("call " + tool); err != nil {
		return nil, err
	}
	defer g.leave()
	return g.execute(ctx, callMeta{emit: emit}, tool, inputs)
}

// execute is Execute for a call already admitted by enter: it runs the
// call on the copies the circuits let through, counts its outcome and
// reports it.
func (g *Gateway) execute(ctx context.Context, cm callMeta, tool string, inputs map[string]any) (*CallResult, error) {
	start := time.Now()
	var res *CallResult
	var o outcome
	var err error
	if cs := g.circuit(); cs.State == CircuitOpen {
		// Every copy's circuit is open: refused before anything is
		// listed or dialled.
		o, err = outcomeRefused, g.circuitErr(cs)
	} else {
		res, o, err = g.executeAllowed(ctx, cm, tool, inputs)
	}
	g.count(o)
	logErr := err
	if err == nil && res.IsError {
		msg, _ := (&session.Budget{Left: 200}).Take(res.llmText)
		logErr = errors.New("isError: " + msg)
	}
	g.observeCall(ctx, cm, tool, o, time.Since(start), logErr)
	return res, err
}

// executeAllowed runs a call on the view that serves ctx's user, acquired
// once: the listing, the call and its retries all run on it, so a per-user
// server reads the user's secrets once and retires the user's own session
// when the call lost it. A sign-in the shared session asked for makes g
// per user (switched), and the call then runs on the user's view.
func (g *Gateway) executeAllowed(ctx context.Context, cm callMeta, tool string, inputs map[string]any) (*CallResult, outcome, error) {
	for {
		// The user's view is held from the listing to the end of the
		// call, so that no other user's call closes it in between.
		v, release, err := g.route(ctx)
		if err != nil {
			return nil, g.classify(ctx, err), err
		}
		res, o, err := g.executeOn(ctx, v, cm, tool, inputs)
		release()
		if v == g.shared && g.switched(err) {
			continue
		}
		return res, o, err
	}
}

// executeOn is executeAllowed on v, held by the caller: the tools are
// listed (on the copy that serves v), the inputs checked, and the call sent
// to the copies in turn while what failed may be sent again (onCopies).
func (g *Gateway) executeOn(ctx context.Context, v *view, cm callMeta, tool string, inputs map[string]any) (*CallResult, outcome, error) {
	ts, o, err := g.toolsFor(ctx, v)
	if err != nil {
		return nil, o, err
	}
	sch, ok := ts.schema[tool]
	if c, held := ts.held[tool]; !ok && held {
		return nil, outcomeNotRun, &heldToolError{Server: g.cfg.Name, Change: c}
	}
	if !ok {
		return nil, outcomeNotRun, &unknownToolError{Server: g.cfg.Name, Tool: tool, Available: ts.names, Closest: closest(tool, ts.names)}
	}
	inputs = sch.WithoutNulls(inputs)
	if err := sch.Validate(tool, inputs); err != nil {
		var ae *tools.ArgumentError
		if errors.As(err, &ae) {
			return nil, outcomeNotRun, err
		}
		return nil, outcomeNotRun, g.serverErr("call "+tool, err)
	}
	if inputs == nil {
		inputs = map[string]any{}
	}
	cm.task, cm.schema = ts.task[tool], ts.headed[tool]
	var res *mcp.CallToolResult
	o, err = g.onCopies(ctx, v, func(c *copyState) (again bool, err error) {
		res, again, err = g.callOn(ctx, v, c, ts, cm, tool, inputs)
		return again, err
	})
	if mr, ok := errors.AsType[*mayHaveRunError](err); ok {
		return mr.result(ctx, g, tool), o, nil
	}
	if err != nil {
		return nil, o, err
	}
	out := convert(res, g.opts.OutputCap)
	if res.IsError {
		return out, outcomeToolError, nil
	}
	return out, outcomeSuccess, nil
}

// toolsFor returns v's tools for a call, listing them when the cache is
// stale. A listing is asked of the circuit like the call: on a server
// without copies, its failure counts as the call's would; with copies,
// a failed copy is marked down and the next one lists (toolsHere).
func (g *Gateway) toolsFor(ctx context.Context, v *view) (*toolSet, outcome, error) {
	if ts, fresh := v.current(); fresh {
		return ts, outcomeSuccess, nil
	}
	var done func(error)
	if !g.multi() {
		var err error
		if done, err = g.allow(g.copies[0]); err != nil {
			return nil, outcomeRefused, err
		}
	}
	ts, err := v.toolsHere(ctx)
	o := outcomeSuccess
	if err != nil {
		o = g.classify(ctx, err)
	}
	if !g.multi() {
		g.attempt(g.copies[0], o, done)
	}
	return ts, o, err
}

// callOn sends the call to copy c of v. A session the server forgot (HTTP
// 404) or that died before the request went out is replaced once, at once.
// On a server without copies, a tool the server says is read-only or
// idempotent is also retried once, on a new session, after any other
// transport failure (with copies, the next copy takes it). again reports
// whether a failed call may go to the next copy: it was never sent, or the
// tool cannot do harm twice.
func (g *Gateway) callOn(ctx context.Context, v *view, c *copyState, ts *toolSet, cm callMeta, tool string, inputs map[string]any) (*mcp.CallToolResult, bool, error) {
	conn := v.conns[c.index]
	res, err := g.call(ctx, conn, cm, tool, inputs)
	if err != nil && ctx.Err() == nil && conn.Lifetime().Err() == nil {
		ce, _ := errors.AsType[*session.CallError](err)
		switch {
		case errors.Is(err, session.ErrRetry):
			res, err = g.call(ctx, conn, cm, tool, inputs)
		case !g.multi() && ts.retry[tool] && ce != nil && ce.Session != nil && isTransportFailure(err):
			g.logger.Info("retrying a read-only tool on a new session", logKeyTool, tool, logKeyErr, g.mask(err.Error()))
			ce.Session.MarkDead(ce.Err)
			conn.Retire(ce.Session)
			res, err = g.call(ctx, conn, cm, tool, inputs)
		}
	}
	if err == nil {
		return res, false, nil
	}
	ce, _ := errors.AsType[*session.CallError](err)
	unsent := ce == nil || ce.Session == nil || session.NotSent(err) || errors.Is(err, session.ErrRetry)
	err = g.userErr(ctx, conn.CallErr(ctx, "call "+tool, errors.Unwrap(err)))
	return nil, unsent || ts.retry[tool], err
}

// call sends one tools/call on conn's current session, connecting if
// there is none (see Conn.CallTool). Its error is a *CallError.
func (g *Gateway) call(ctx context.Context, conn *session.Conn, cm callMeta, tool string, inputs map[string]any) (*mcp.CallToolResult, error) {
	s, err := conn.Session(ctx)
	if err != nil {
		return nil, &session.CallError{Err: err}
	}
	res, err := conn.CallTool(ctx, s, session.Call{Tool: tool, Inputs: inputs, User: cmp.Or(cm.user, UserFrom(ctx)), Emit: cm.emit, Task: cm.task,
		Schema: cm.schema})
	if err != nil && !errors.As(err, new(*session.CallError)) {
		err = &session.CallError{Err: err}
	}
	return res, err
}

// isTransportFailure reports whether a call error means the request or its
// answer was lost on the way, rather than a timeout or an error the server
// answered with.
func isTransportFailure(err error) bool {
	return !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) &&
		!errors.Is(err, session.ErrClosed) && !errors.Is(err, session.ErrMessageTooLarge) && !session.IsServerAnswer(err)
}

// closest returns the name nearest to want by edit distance, or "" when
// nothing is within half of want's length.
func closest(want string, names []string) string {
	best, bestD := "", len(want)/2+1
	lw := strings.ToLower(want)
	for _, n := range names {
		if d := textdist.Distance(lw, strings.ToLower(n)); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// Run dispatches on the action input. Failures the model can act on (unknown
// action or tool, bad tool_inputs, an isError result, an unavailable server)
// are error Results; only a done ctx is returned as an error.
func (g *Gateway) Run(ctx context.Context, call tools.Call, emit tools.Emitter) (res tools.Result, err error) {
	if call.UserID != "" {
		ctx = WithUser(ctx, call.UserID)
	}
	action, _ := call.Args["action"].(string)
	if action == "" {
		action = "list"
	}
	tool, _ := call.Args["tool_name"].(string)
	ctx, span := startAction(ctx, g.cfg.Name, action, tool)
	defer func() { endAction(span, res, err) }()
	if err := g.enter(action); err != nil {
		return g.failure(ctx, err)
	}
	defer g.leave()
	switch action {
	case "list":
		start := time.Now()
		query, _ := call.Args["query"].(string)
		res, err := g.listAction(ctx, query)
		status := CallSuccess
		if err != nil {
			status = CallFailure
		}
		g.logCall(ctx, callMeta{requestID: call.RequestID, user: call.UserID, conversation: call.ConversationID},
			"list", "", status, time.Since(start), err)
		if err != nil {
			return g.failure(ctx, err)
		}
		return res, nil
	case "execute":
		return g.runExecute(ctx, callMeta{requestID: call.RequestID, user: call.UserID, conversation: call.ConversationID, emit: emit}, call.Args)
	case "list_resources", "read_resource", "list_prompts", "get_prompt":
		return g.resourceAction(ctx, action, call.Args)
	default:
		return tools.ErrorResult(fmt.Sprintf("unknown action %q for %s", action, g.toolName),
			`use action "list" to see the tools, "execute" with tool_name and tool_inputs, `+
				`"list_resources", "read_resource" with uri, "list_prompts" or "get_prompt" with name and arguments`), nil
	}
}

func (g *Gateway) runExecute(ctx context.Context, cm callMeta, args map[string]any) (tools.Result, error) {
	name, _ := args["tool_name"].(string)
	if name == "" {
		return tools.ErrorResult("tool_name is required when action is execute",
			`call with action "list" first, then give tool_name`), nil
	}
	var inputs map[string]any
	switch v := args["tool_inputs"].(type) {
	case nil:
	case map[string]any:
		inputs = v
	case string:
		// Some models send the object as a JSON string.
		dec := json.NewDecoder(strings.NewReader(v))
		dec.UseNumber()
		if err := dec.Decode(&inputs); err != nil {
			return tools.ErrorResult("tool_inputs must be an object", "give tool_inputs as a JSON object"), nil
		}
	default:
		return tools.ErrorResult("tool_inputs must be an object", "give tool_inputs as a JSON object"), nil
	}
	res, err := g.execute(ctx, cm, name, inputs)
	if err != nil {
		return g.failure(ctx, err)
	}
	meta := map[string]any{"server": g.cfg.Name, "action": "execute", "tool": name}
	if res.IsError {
		r := tools.ErrorResult(fmt.Sprintf("tool %s on server %s returned an error", name, g.cfg.Name), res.llmText)
		r.Metadata = meta
		return r, nil
	}
	return tools.Result{Name: name, Type: resultType(res), Objects: res.objects(), Metadata: meta, LLMText: res.llmText}, nil
}

// failure turns an error into a self-healing Result, or returns it when the
// caller's ctx is done.
func (g *Gateway) failure(ctx context.Context, err error) (tools.Result, error) {
	if ctx.Err() != nil {
		return tools.Result{}, ctx.Err()
	}
	var ae *tools.ArgumentError
	var ut *unknownToolError
	switch {
	case errors.As(err, &ae):
		return tools.ErrorResult("invalid tool_inputs for "+ae.Tool, ae.Feedback()), nil
	case errors.As(err, &ut):
		fb := "available tools: " + strings.Join(ut.Available, ", ")
		if ut.Closest != "" {
			fb = fmt.Sprintf("did you mean %q? ", ut.Closest) + fb
		}
		return tools.ErrorResult(fmt.Sprintf("unknown tool %q on server %q", ut.Tool, ut.Server), fb), nil
	case errors.Is(err, errSecretRequired):
		sr, _ := errors.AsType[*secretRequiredError](err)
		var names []string
		if sr != nil {
			names = sr.Names
		}
		return tools.ErrorResult(g.maskFor(ctx, err.Error()), fmt.Sprintf(
			"the user has not set their own %s for server %s: ask them to set it (the key panel in the UI), then try again; meanwhile use another option",
			strings.Join(names, ", "), g.cfg.Name)), nil
	case errors.Is(err, mcpauth.ErrSignInRequired):
		return tools.ErrorResult(g.maskFor(ctx, err.Error()), fmt.Sprintf(
			"the user has not signed in to server %s: ask them to sign in (Connect in the UI, or `elysia mcp login %s`), then try again; meanwhile use another option",
			g.cfg.Name, g.cfg.Name)), nil
	case errors.Is(err, ErrCircuitOpen):
		return tools.ErrorResult(err.Error(),
			"the server keeps failing; use another option, or try it again after the time given"), nil
	case errors.Is(err, errDraining):
		return tools.ErrorResult(g.maskFor(ctx, err.Error()),
			"the server's configuration is changing; list its tools again in a moment"), nil
	case errors.As(err, new(*allFailedError)):
		return tools.ErrorResult(g.maskFor(ctx, err.Error()), fmt.Sprintf(
			"no copy of server %s could take the call; use another option, or try it again later", g.cfg.Name)), nil
	case permanentFailure(err) != "":
		return tools.ErrorResult(g.maskFor(ctx, err.Error()), fmt.Sprintf(
			"server %s cannot work as configured (%s): trying again will not help; tell the user to fix its entry in mcp.json (`elysia config check` helps), and meanwhile use another option",
			g.cfg.Name, permanentFailure(err))), nil
	default:
		return tools.ErrorResult(g.maskFor(ctx, err.Error()),
			"the server could not be reached; try again later or use another option"), nil
	}
}
