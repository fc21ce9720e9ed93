package mcpendpoint

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpendpoint/internal/capped"
	"github.com/elysia-go/elysia/mcpendpoint/internal/content"
	"github.com/elysia-go/elysia/mcpendpoint/internal/held"
	"github.com/elysia-go/elysia/mcpendpoint/internal/jsonrpc"
	"github.com/elysia-go/elysia/mcpendpoint/internal/reply"
	"github.com/elysia-go/elysia/mcpendpoint/internal/reqstate"
	"github.com/elysia-go/elysia/mcpgateway"
)

// 2026-07-28 calls (SEP-2322, multi round-trip requests). A 2026-07-28
// client has no session to be asked on: what the endpoint must ask it
// during a call (an upstream's elicitation or sampling, a question of ask's
// run) is the answer to the tools/call itself, an input_required result
// with the questions and a sealed requestState (internal/reqstate), and the
// client sends the same tools/call again with its answers. The call cannot
// start over, though: the question belongs to an upstream request that runs
// on this replica (and, for a 2025-11-25 upstream, to a session held here).
// So every 2026-07-28 tools/call runs on a goroutine the endpoint owns, a
// held call (internal/held); the client's request waits for its first
// event. A question suspends the call and answers the request; the retry
// hands the answers to the questions that wait, then waits for the call's
// next event: its result, or its next questions, up to maxInputRounds
// rounds. A suspended call waits InputWait for the retry, then is
// cancelled; a client that leaves while it waits cancels the call, as any
// abandoned call. The calls suspended at once are capped, in all and per
// user: past the cap a question is declined. A retry that lands on
// another replica reaches the holder through the Relay (heldrelay.go).

// Defaults of Options.
const (
	// DefaultInputWait is how long a 2026-07-28 call waits for its
	// client's answers before it is cancelled.
	DefaultInputWait = 2 * time.Minute
	// DefaultMaxHeldCalls bounds the 2026-07-28 calls waiting for their
	// clients' answers at once; one user holds at most a sixteenth of
	// them (at least 8).
	DefaultMaxHeldCalls = 1024
)

// maxInputRounds bounds the input_required results of one call: past it
// the call is cancelled and the client told why.
const maxInputRounds = 16

// heldTable is the endpoint's 2026-07-28 calls. Its zero value is not
// ready: see newHeldTable.
type heldTable struct {
	// run owns the goroutines of the calls and of the retries other
	// replicas relay here; life ends them (close).
	run  goGroup
	life context.Context //nolint:containedctx // the lifetime of those goroutines, ended by close
	stop context.CancelFunc
	// calls are the calls that asked their client something, by id,
	// until they are forgotten.
	calls capped.Table[*held.Call]
	// mu guards waiting, the retries relayed from here, by reply id
	// (heldrelay.go).
	mu      sync.Mutex
	waiting map[string]chan *envelope
}

func newHeldTable() *heldTable {
	ctx, cancel := context.WithCancel(context.Background())
	return &heldTable{life: ctx, stop: cancel, waiting: map[string]chan *envelope{}}
}

// close cancels every call and waits for their goroutines.
func (t *heldTable) close() {
	t.stop()
	t.run.Wait()
	for _, h := range t.calls.Values() {
		h.StopLapse()
	}
}

// hold records h among the calls asking their client, unless it is
// already or the caps are reached (errTooManyHeld).
func (t *heldTable) hold(h *held.Call, limit int) error {
	if !t.calls.Hold(h.ID(), h.User(), h, limit) {
		return errTooManyHeld
	}
	return nil
}

// get returns held call id, or nil.
func (t *heldTable) get(id string) *held.Call { return t.calls.Get(id) }

// forget drops h from the calls asking their client; it may be called
// more than once.
func (t *heldTable) forget(h *held.Call) { t.calls.Forget(h.ID(), h) }

// errTooManyHeld is why a question is declined past the caps.
var errTooManyHeld = errors.New("the service holds too many calls waiting for their clients' answers")

// hintOf returns what the gateway knows of the question asked with ctx
// (mcpgateway.InputKeyFrom): the key its 2026-07-28 server asked under,
// and the number of questions in its round.
func hintOf(ctx context.Context) held.Hint {
	key, size := mcpgateway.InputKeyFrom(ctx)
	return held.Hint{Key: key, Size: size}
}

// heldAsk puts r to the client of the held call h and waits for its
// answer, or ctx. The first question holds the call among those asking
// (the caps of MaxHeldCalls): past them it is errTooManyHeld.
func (e *Endpoint) heldAsk(ctx context.Context, h *held.Call, r mcp.InputRequest, hint held.Hint) (mcp.InputResponse, error) {
	return h.Ask(ctx, r, hint, func() error { return e.held.hold(h, e.opts.MaxHeldCalls) })
}

// startCall runs the 2026-07-28 tools/call req of user on a goroutine of
// the endpoint, w waiting on it from the start.
func (e *Endpoint) startCall(ctx context.Context, req mcp.CallToolRequest, user string, w *held.Waiter) (*held.Call, error) {
	return e.startHeld(ctx, user, w, req.Params.InputResponses, func() []byte { return bindOf(req) },
		func(ctx context.Context) (*mcp.CallToolResult, error) { return e.route(ctx, req) })
}

// startHeld runs a 2026-07-28 request of user, run, on a goroutine of the
// endpoint, w waiting on it from the start: its ctx keeps the request's
// values, not its end. early is the answers the client sent with it, bind
// what its requestStates are bound to.
func (e *Endpoint) startHeld(ctx context.Context, user string, w *held.Waiter, early mcp.InputResponses, bind func() []byte,
	run func(context.Context) (*mcp.CallToolResult, error)) (*held.Call, error) {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(e.held.life, cancel)
	h := held.New(held.Config{ID: held.NewID(), User: user, Cancel: cancel, Waiter: w, Early: early, Bind: bind,
		Rounds: maxInputRounds, Wait: e.opts.InputWait, Lapsed: e.lapsed})
	rctx = held.NewContext(rctx, h)
	started := e.held.run.Go(func() {
		defer stop()
		defer cancel()
		var (
			res *mcp.CallToolResult
			err error
		)
		defer func() {
			if p := recover(); p != nil {
				e.logger.Error("a 2026-07-28 call panicked", logKeyUser, user, "panic", p)
				res, err = nil, fmt.Errorf("the call failed inside the service")
			}
			h.Finish(res, err)
		}()
		res, err = run(rctx)
	})
	if !started {
		stop()
		cancel()
		return nil, errors.New("the MCP endpoint is closing: call the tool again")
	}
	return h, nil
}

// bindOf is the reqstate.BindHash of a tools/call as the client sent it.
func bindOf(req mcp.CallToolRequest) []byte {
	args, _ := content.Arguments(req) // a bad one never runs: it binds as null
	return reqstate.BindHash(clientToolName(req), args)
}

// clientToolName is the tool the client called (beforeCallTool keeps it).
func clientToolName(req mcp.CallToolRequest) string {
	if req.Params.Meta != nil {
		if n, ok := req.Params.Meta.AdditionalFields[nameKey].(string); ok {
			return n
		}
	}
	return req.Params.Name
}

// routeModern answers a 2026-07-28 tools/call of ctx's user: a new call
// starts on a goroutine of the endpoint, a retry (with a requestState)
// hands its answers to its call, here or on the replica holding it; then
// the request waits for the call's next event.
func (e *Endpoint) routeModern(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	user := mcpgateway.UserFrom(ctx)
	w := &held.Waiter{Ctx: ctx, Progress: e.progressEmitter(ctx, req)}
	p := e.policyOf(ctx, user, req)
	if err := e.checkParamHeaders(ctx, user, req, p.reply); err != nil {
		return nil, err
	}
	if text := req.Params.RequestState; text != "" {
		h, res, err := e.resumeHeld(ctx, user, text, bindOf(req), req.Params.InputResponses, p, "call the tool again")
		if h == nil {
			return res, err
		}
		res, err = e.awaitTask(ctx, h, w, p)
		return missingCapability(h, p.reply, res, err)
	}
	if p.support == string(mcp.TaskSupportRequired) && !p.declared {
		return nil, e.errNeedsTasks(p, clientToolName(req))
	}
	h, err := e.startCall(ctx, req, user, w)
	if err != nil {
		return nil, err
	}
	res, err := e.awaitTask(ctx, h, w, p)
	return missingCapability(h, p.reply, res, err)
}

// resumeHeld hands the answers rs of a retry of user with requestState
// text, bound to bind, to its held call and returns the call, to be
// waited on; or, with a nil call, the retry's answer: its refusal (again
// says what to do instead), or the outcome the replica holding the call
// gave, which may have made it a task under p.
func (e *Endpoint) resumeHeld(ctx context.Context, user, text string, bind []byte, rs mcp.InputResponses, p taskPolicy,
	again string) (*held.Call, *mcp.CallToolResult, error) {
	st, err := e.sealer.OpenFor(text, user, bind, time.Now())
	if err != nil {
		return nil, nil, err
	}
	if st.Replica != e.tag {
		res, err := e.retryElsewhere(ctx, st, text, rs, p)
		return nil, res, err
	}
	h := e.held.get(st.Call)
	if h == nil || h.User() != user {
		return nil, nil, fmt.Errorf("%w: it ended, or waited longer than %v for these answers: %s", ErrCallGone, e.opts.InputWait, again)
	}
	if err := h.Answer(st.Round, rs); err != nil {
		return nil, nil, err
	}
	return h, nil, nil
}

// missingCapability returns the outcome res, err of h as the client gets
// it: a call that failed after its server asked for what the client did
// not declare, and the service could not do instead (sampling, with the
// server's "sampling" off), is answered -32021
// MissingRequiredClientCapability naming it, with HTTP 400, through reply.
// A call that got over the refusal keeps its result.
func missingCapability(h *held.Call, reply *reply.Reply, res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error) {
	missing := h.Missing()
	if missing == "" || reply == nil || (err == nil && (res == nil || !res.IsError)) {
		return res, err
	}
	reply.SetError(mcp.MISSING_REQUIRED_CLIENT_CAPABILITY,
		fmt.Sprintf("the tool's server asked for %s, which this client did not declare in its capabilities: declare it and call again", missing),
		map[string]any{"requiredCapabilities": map[string]any{missing: map[string]any{}}})
	return nil, mcp.MissingRequiredClientCapabilityError{Capability: missing}
}

// await is awaitTask for a call that stays a call.
func (e *Endpoint) await(ctx context.Context, h *held.Call, w *held.Waiter) (*mcp.CallToolResult, error) {
	return e.awaitTask(ctx, h, w, taskPolicy{})
}

// abandon ends h when w, the request waiting on it, ended first (its
// client left) and the call is not done: it is cancelled and forgotten.
func (e *Endpoint) abandon(h *held.Call, w *held.Waiter) {
	if h.Abandon(w) {
		h.Cancel()
		e.held.forget(h)
	}
}

// inputRequired answers the request waiting on h with the questions it
// has for the client (next, held.Asked), the call then waiting InputWait
// for the retry; or, when the call asked maxInputRounds times already
// (held.Exhausted), cancels it and says so.
func (e *Endpoint) inputRequired(h *held.Call, next held.Next) (*mcp.CallToolResult, error) {
	if next.Event == held.Exhausted {
		h.Cancel()
		e.held.forget(h)
		return nil, fmt.Errorf("the call asked its client for input %d times, the most it may: it was cancelled", maxInputRounds)
	}
	state := e.sealer.Seal(reqstate.State{Call: h.ID(), Replica: e.tag, Round: next.Round, Expires: time.Now().Add(e.opts.InputWait).Unix(),
		User: reqstate.UserHash(h.User()), Bind: h.Bind()})
	return &mcp.CallToolResult{
		Result:               mcp.Result{ResultType: mcp.ResultTypeInputRequired},
		MultiRoundTripResult: mcp.MultiRoundTripResult{InputRequests: next.Requests, RequestState: state},
	}, nil
}

// lapsed cancels h, gone, when its client has not come back with the
// answers of its round within InputWait (held.Config.Lapsed).
func (e *Endpoint) lapsed(h *held.Call) {
	e.logger.Info("a 2026-07-28 call's client did not answer in time: the call is cancelled", logKeyUser, h.User(), "waited", e.opts.InputWait)
	h.Cancel()
	e.held.forget(h)
}

// heldElicit puts an elicitation of the held call h to its client.
func (e *Endpoint) heldElicit(ctx context.Context, h *held.Call, params mcp.ElicitationParams, hint held.Hint) (*mcp.ElicitationResult, error) {
	r, err := e.heldAsk(ctx, h, mcp.NewElicitationInputRequest(params), hint)
	if err != nil {
		return nil, err
	}
	if r.Elicitation == nil {
		return nil, errors.New("the MCP client's answer is not an elicitation result")
	}
	return r.Elicitation, nil
}

// heldSample puts a sampling request of the held call h to its client.
func (e *Endpoint) heldSample(ctx context.Context, h *held.Call, req mcp.CreateMessageRequest, hint held.Hint) (*mcp.CreateMessageResult, error) {
	r, err := e.heldAsk(ctx, h, mcp.NewSamplingInputRequest(req.CreateMessageParams), hint)
	if err != nil {
		return nil, err
	}
	if r.Sampling == nil {
		return nil, errors.New("the MCP client's answer is not a sampling result")
	}
	res := *r.Sampling
	content, err := mcp.ParseSamplingContent(res.Content)
	if err != nil {
		return nil, fmt.Errorf("the MCP client's sampling result: %w", err)
	}
	res.Content = content
	return &res, nil
}

// isModern reports whether ctx is a 2026-07-28 request's.
func isModern(ctx context.Context) bool { return mcpserver.IsModernRequest(ctx) }

// checkRetry refuses the 2026-07-28 tools/call m when it carries a
// requestState ctx's user may not use (reqstate.Sealer.OpenFor): the
// client gets a JSON-RPC error saying why, and nothing runs. Anything else
// passes, to be answered as mcp-go and route see fit.
func (e *Endpoint) checkRetry(ctx context.Context, m *jsonrpc.Message) error {
	var p mcp.CallToolParams
	if m.DecodeParams(&p) != nil || p.RequestState == "" || !mcp.IsModernProtocol(p.Meta.ProtocolVersion()) {
		return nil
	}
	_, err := e.sealer.OpenFor(p.RequestState, mcpgateway.UserFrom(ctx), bindOf(mcp.CallToolRequest{Params: p}), time.Now())
	return err
}
