package mcpgateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

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
// *tools.ArgumentError (errors.As), an unknown tool an *UnknownToolError
// (errors.Is tools.ErrUnknownTool). An isError result is a *CallResult with
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

// execute is Execute for a call already admitted by enter: it asks the
// circuit, runs the call, records its outcome and reports it.
func (g *Gateway) execute(ctx context.Context, cm callMeta, tool string, inputs map[string]any) (*CallResult, error) {
	start := time.Now()
	done, err := g.allow()
	if err != nil {
		g.record(outcomeRefused, nil)
		g.observeCall(ctx, cm, tool, outcomeRefused, time.Since(start), err)
		return nil, err
	}
	res, o, err := g.executeAllowed(ctx, cm, tool, inputs)
	g.record(o, done)
	logErr := err
	if err == nil && res.IsError {
		msg, _ := (&budget{left: 200}).take(res.llmText)
		logErr = errors.New("isError: " + msg)
	}
	g.observeCall(ctx, cm, tool, o, time.Since(start), logErr)
	return res, err
}

func (g *Gateway) executeAllowed(ctx context.Context, cm callMeta, tool string, inputs map[string]any) (*CallResult, outcome, error) {
	// The user's session is held from the listing to the end of the
	// call, so that no other user's call closes it in between.
	_, release, err := g.route(ctx)
	if err != nil {
		return nil, g.classify(ctx, err), err
	}
	defer release()
	ts, err := g.tools(ctx)
	if err != nil {
		return nil, g.classify(ctx, err), err
	}
	sch, ok := ts.schema[tool]
	if !ok {
		return nil, outcomeNotRun, &UnknownToolError{Server: g.cfg.Name, Tool: tool, Available: ts.names, Closest: closest(tool, ts.names)}
	}
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
	cm.task = ts.task[tool]
	res, err := g.call(ctx, cm, tool, inputs)
	if err != nil && ctx.Err() == nil && g.conn.lifetime.Err() == nil {
		// A session the server forgot (HTTP 404) or that died before the
		// request went out is replaced once, at once. A tool the server
		// says is read-only or idempotent is also retried once, on a new
		// session, after any other transport failure.
		var p plain
		switch {
		case errors.Is(err, errRetry):
			res, err = g.call(ctx, cm, tool, inputs)
		case ts.retry[tool] && errors.As(err, &p) && p.s != nil && isTransportFailure(err):
			g.logger.Info("retrying a read-only tool on a new session", logKeyTool, tool, logKeyErr, g.mask(err.Error()))
			p.s.markDead(p.err)
			g.conn.retire(p.s)
			res, err = g.call(ctx, cm, tool, inputs)
		}
	}
	if err != nil {
		err = g.userErr(ctx, g.conn.callErr(ctx, "call "+tool, errors.Unwrap(err)))
		return nil, g.classify(ctx, err), err
	}
	out := convert(res, g.opts.OutputCap)
	if res.IsError {
		return out, outcomeToolError, nil
	}
	return out, outcomeSuccess, nil
}

// errRetry marks a call error after which a fresh session may safely retry.
var errRetry = errors.New("retry on a new session")

type retryable struct{ err error }

func (r retryable) Error() string        { return r.err.Error() }
func (r retryable) Unwrap() error        { return r.err }
func (r retryable) Is(target error) bool { return target == errRetry }

// plain is a call error that is not safe to retry in general; s is the
// session it happened on, nil when there was none.
type plain struct {
	err error
	s   *session
}

func (p plain) Error() string { return p.err.Error() }
func (p plain) Unwrap() error { return p.err }

// call sends one tools/call on the current session. It carries a progress
// token: progress goes to cm.emit and moves the deadline on (call_timeout
// after the last report, max_call_time at most); questions and messages the
// server sends during the call reach cm's user only.
func (g *Gateway) call(ctx context.Context, cm callMeta, tool string, inputs map[string]any) (*mcp.CallToolResult, error) {
	res, err := routed(ctx, g, func(c *Gateway) (*mcp.CallToolResult, error) { return c.callHere(ctx, cm, tool, inputs) })
	if err != nil && !errors.As(err, new(plain)) && !errors.Is(err, errRetry) {
		err = plain{err: err} // from route: callHere's are plain or retryable
	}
	return res, err
}

// callHere is call on g's own conn.
func (g *Gateway) callHere(ctx context.Context, cm callMeta, tool string, inputs map[string]any) (_ *mcp.CallToolResult, err error) {
	s, err := g.conn.session(ctx)
	if err != nil {
		return nil, plain{err: err}
	}
	cctx, extend, hold, cancel := g.conn.progressCtx(ctx)
	defer cancel()
	emit := cm.emit
	if emit == nil {
		emit = tools.Discard
	}
	ac := &activeCall{token: fmt.Sprintf("elysia-%d", g.conn.seq.Add(1)), server: g.cfg.Name, tool: tool,
		user: cmp.Or(cm.user, UserFrom(ctx)), emit: emit, extend: extend, hold: hold, ctx: cctx, relay: startRelay(emit)}
	defer ac.relay.close() // after untrack: the call's last messages go out before its result
	defer s.track(ac)()
	var res *mcp.CallToolResult
	cctx, span := startMCP(cctx, g.cfg.Name, s, string(mcp.MethodToolsCall), tool)
	defer func() { endMCP(span, err, res != nil && res.IsError) }()
	if cm.task && !mcp.IsModernProtocol(s.protocol) {
		// Tasks as 2025-11-25 defines them; the 2026-07-28 core changes
		// them, and mcp-go's typed call handles its multi-round results.
		res, err = g.conn.callTask(withCall(cctx, ac), s, ac, tool, inputs)
	} else {
		req := mcp.CallToolRequest{}
		req.Params.Name = tool
		req.Params.Arguments = inputs
		req.Params.Meta = &mcp.Meta{ProgressToken: ac.token, AdditionalFields: traceMeta(cctx)}
		stop := s.wedgeGuard(cctx, "call "+tool)
		res, err = s.client.CallTool(withCall(cctx, ac), req)
		stop()
	}
	if err == nil {
		return res, nil
	}
	if isSessionGone(err) {
		s.markDead(err)
		err = s.cause(err)
		g.conn.retire(s)
		// A 404 means the server never ran the request; but the polls of a
		// task the server created come after it started working.
		if sentNothing(err) && cctx.Err() == nil && !isTaskStarted(err) {
			return nil, retryable{err}
		}
	}
	if cause := context.Cause(cctx); cctx.Err() != nil && ctx.Err() == nil && errors.Is(cause, context.DeadlineExceeded) {
		_, timeout := g.cfg.Timeouts()
		maxCall, _ := g.cfg.Limits()
		limit := fmt.Sprintf("call_timeout %v", timeout)
		if errors.Is(cause, errMaxCallTime) {
			limit = fmt.Sprintf("max_call_time %v", maxCall)
		}
		err = fmt.Errorf("no answer within %s: %w (%w)", limit, err, context.DeadlineExceeded)
	}
	return nil, plain{err: err, s: s}
}

// isTransportFailure reports whether a call error means the request or its
// answer was lost on the way, rather than a timeout or an error the server
// answered with.
func isTransportFailure(err error) bool {
	return !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) &&
		!errors.Is(err, ErrClosed) && !errors.Is(err, ErrMessageTooLarge) && !isServerAnswer(err)
}

// isServerAnswer reports whether err is a JSON-RPC error the server sent:
// the server is alive and ran (or refused) the request.
func isServerAnswer(err error) bool {
	for _, target := range []error{mcp.ErrParseError, mcp.ErrInvalidRequest, mcp.ErrMethodNotFound,
		mcp.ErrInvalidParams, mcp.ErrInternalError, mcp.ErrRequestInterrupted, mcp.ErrResourceNotFound} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// sentNothing reports whether err proves the request never reached a server
// that could run it: the HTTP session was unknown (404), or writing to the
// child's stdin failed.
func sentNothing(err error) bool {
	return errors.Is(err, mcptransport.ErrSessionTerminated) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed)
}

// closest returns the name nearest to want by edit distance, or "" when
// nothing is within half of want's length.
func closest(want string, names []string) string {
	best, bestD := "", len(want)/2+1
	lw := strings.ToLower(want)
	for _, n := range names {
		if d := levenshtein(lw, strings.ToLower(n)); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
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
	var ut *UnknownToolError
	switch {
	case errors.As(err, &ae):
		return tools.ErrorResult("invalid tool_inputs for "+ae.Tool, ae.Feedback()), nil
	case errors.As(err, &ut):
		fb := "available tools: " + strings.Join(ut.Available, ", ")
		if ut.Closest != "" {
			fb = fmt.Sprintf("did you mean %q? ", ut.Closest) + fb
		}
		return tools.ErrorResult(fmt.Sprintf("unknown tool %q on server %q", ut.Tool, ut.Server), fb), nil
	case errors.Is(err, ErrSecretRequired):
		sr, _ := errors.AsType[*SecretRequiredError](err)
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
	case errors.Is(err, ErrDraining):
		return tools.ErrorResult(g.maskFor(ctx, err.Error()),
			"the server's configuration is changing; list its tools again in a moment"), nil
	case permanentFailure(err) != "":
		return tools.ErrorResult(g.maskFor(ctx, err.Error()), fmt.Sprintf(
			"server %s cannot work as configured (%s): trying again will not help; tell the user to fix its entry in mcp.json (`elysia config check` helps), and meanwhile use another option",
			g.cfg.Name, permanentFailure(err))), nil
	default:
		return tools.ErrorResult(g.maskFor(ctx, err.Error()),
			"the server could not be reached; try again later or use another option"), nil
	}
}
