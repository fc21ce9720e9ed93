package mcpendpoint

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpendpoint/internal/capped"
	"github.com/elysia-go/elysia/mcpendpoint/internal/jsonrpc"
	"github.com/elysia-go/elysia/mcpendpoint/internal/reqstate"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/tools"
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
// held call; the client's request waits for its first event. A question
// suspends the call and answers the request; the retry hands the answers to
// the questions that wait, then waits for the call's next event: its
// result, or its next questions, up to maxInputRounds rounds. A suspended
// call waits InputWait for the retry, then is cancelled; a client that
// leaves while it waits cancels the call, as any abandoned call. The calls
// suspended at once are capped, in all and per user: past the cap a
// question is declined. A retry that lands on another replica reaches the
// holder through the Relay (heldrelay.go).

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

// heldKey is the context key of the held call a goroutine runs.
type heldKey struct{}

// heldFrom returns the held call ctx runs, or nil.
func heldFrom(ctx context.Context) *heldCall {
	h, _ := ctx.Value(heldKey{}).(*heldCall)
	return h
}

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
	calls capped.Table[*heldCall]
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
		h.mu.Lock()
		if h.lapse != nil {
			h.lapse.Stop()
		}
		h.mu.Unlock()
	}
}

// hold records h among the calls asking their client, unless it is
// already or the caps are reached (errTooManyHeld).
func (t *heldTable) hold(h *heldCall, limit int) error {
	if !t.calls.Hold(h.id, h.user, h, limit) {
		return errTooManyHeld
	}
	return nil
}

// get returns held call id, or nil.
func (t *heldTable) get(id string) *heldCall { return t.calls.Get(id) }

// forget drops h from the calls asking their client; it may be called
// more than once.
func (t *heldTable) forget(h *heldCall) { t.calls.Forget(h.id, h) }

// errTooManyHeld is why a question is declined past the caps.
var errTooManyHeld = errors.New("the service holds too many calls waiting for their clients' answers")

// heldCall is one 2026-07-28 tools/call running on the endpoint's
// goroutine.
type heldCall struct {
	id     string
	user   string
	cancel context.CancelFunc
	// bind hashes the request (reqstate.BindHash), computed when first sealed.
	bind func() []byte

	// mu guards the fields below.
	mu sync.Mutex
	// questions are those put to the client and not answered yet, by the
	// key the client answers them under.
	questions map[string]*question
	seq       int
	// round counts the input_required results sent.
	round int
	// done, res and err are the call's end.
	done bool
	res  *mcp.CallToolResult
	err  error
	// gone is set when the call is abandoned or lapsed: no retry takes it.
	gone bool
	// changed is closed (and replaced) on every change of the above.
	changed chan struct{}
	// waiter is the client request waiting on the call now, if any.
	waiter *heldWaiter
	// lapse cancels the call when no retry comes within InputWait of an
	// input_required result.
	lapse *time.Timer
	// task is set once the call is a task (tasks.go); failure is its
	// server's error, which fails the task (noteFailure).
	task    bool
	failure error
	// missing is a capability the client did not declare that the call's
	// server asked for (CapabilityNoter).
	missing string
	// early is the answers the client sent with its first request, before
	// anything was asked, by key (takeEarly).
	early mcp.InputResponses
	// batch signals the waiting request roundWait after a round's first
	// question, when the others are late (signalRoundLocked).
	batch *time.Timer
}

// question is one question of a call to its client.
type question struct {
	req   mcp.InputRequest
	reply chan mcp.InputResponse // buffered: answered at most once
}

// heldWaiter is a client request waiting on a held call: the call's
// progress and log messages go to it.
type heldWaiter struct {
	ctx      context.Context //nolint:containedctx // the request waiting, whose stream takes the call's notifications
	progress tools.Emitter   // nil: the client asked for none
}

func (h *heldCall) signalLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// current returns the request waiting on h, or nil.
func (h *heldCall) current() *heldWaiter {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.waiter
}

// finish records the call's end.
func (h *heldCall) finish(res *mcp.CallToolResult, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.done, h.res, h.err = true, res, err
	h.signalLocked()
}

// inputHint is what the gateway knows of a question from a 2026-07-28
// server (mcpgateway.InputKeyFrom): the key it asked under, and the number
// of questions in its round.
type inputHint struct {
	key  string
	size int
}

// hintOf returns the inputHint of the question asked with ctx.
func hintOf(ctx context.Context) inputHint {
	key, size := mcpgateway.InputKeyFrom(ctx)
	return inputHint{key, size}
}

// roundWait is how long the first question of a round waits for the
// others its server asked with it, so that they go to the client in one
// input_required result.
const roundWait = 100 * time.Millisecond

// ask puts r to the client of h and waits for its answer, or ctx. It is
// asked under its server's key when there is one and it is free, else
// under one of the endpoint's; an answer the client gave under that key
// before it was asked (with its first request) is taken at once. The
// first question holds the call among those asking (ep's caps).
func (h *heldCall) ask(ctx context.Context, ep *Endpoint, r mcp.InputRequest, hint inputHint) (mcp.InputResponse, error) {
	if a, ok := h.takeEarly(hint.key, r.Method); ok {
		return a, nil
	}
	if err := ep.held.hold(h, ep.opts.MaxHeldCalls); err != nil {
		return mcp.InputResponse{}, err
	}
	q := &question{req: r, reply: make(chan mcp.InputResponse, 1)}
	h.mu.Lock()
	key := hint.key
	for key == "" || h.questions[key] != nil {
		h.seq++
		key = "elysia-" + strconv.Itoa(h.seq)
	}
	h.questions[key] = q
	h.signalRoundLocked(hint.size)
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.questions, key) // given up: not asked again
		h.mu.Unlock()
	}()
	select {
	case a := <-q.reply:
		return a, nil
	case <-ctx.Done():
		return mcp.InputResponse{}, ctx.Err()
	}
}

// signalRoundLocked tells the waiting request of a new question once the
// round's size questions are all asked, or roundWait after the first.
func (h *heldCall) signalRoundLocked(size int) {
	if len(h.questions) >= size {
		if h.batch != nil {
			h.batch.Stop()
			h.batch = nil
		}
		h.signalLocked()
		return
	}
	if h.batch == nil {
		h.batch = time.AfterFunc(roundWait, func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.batch = nil
			h.signalLocked()
		})
	}
}

// takeEarly takes the answer the client sent under key with its first
// request, before it was asked, when it answers a question of method.
func (h *heldCall) takeEarly(key string, method mcp.MCPMethod) (mcp.InputResponse, bool) {
	if key == "" {
		return mcp.InputResponse{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	a, ok := h.early[key]
	if !ok {
		return mcp.InputResponse{}, false
	}
	delete(h.early, key)
	return a, a.DecodeFor(method) == nil
}

// answer hands the client's answers of round to the questions that wait
// for them; an answer that does not decode leaves its question to be asked
// again.
func (h *heldCall) answer(round int, rs mcp.InputResponses) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.gone:
		return fmt.Errorf("%w: call the tool again", ErrCallGone)
	case round != h.round:
		return fmt.Errorf("%w: it answers round %d of the call, which asked again since (round %d): send the latest", ErrRequestState, round, h.round)
	}
	for key, r := range rs {
		q := h.questions[key]
		if q == nil || r.DecodeFor(q.req.Method) != nil {
			continue
		}
		delete(h.questions, key)
		q.reply <- r
	}
	return nil
}

// newCallID returns a random id for a held call.
func newCallID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// startCall runs the 2026-07-28 tools/call req of user on a goroutine of
// the endpoint, w waiting on it from the start.
func (e *Endpoint) startCall(ctx context.Context, req mcp.CallToolRequest, user string, w *heldWaiter) (*heldCall, error) {
	return e.startHeld(ctx, user, w, req.Params.InputResponses, func() []byte { return bindOf(req) },
		func(ctx context.Context) (*mcp.CallToolResult, error) { return e.route(ctx, req) })
}

// startHeld runs a 2026-07-28 request of user, run, on a goroutine of the
// endpoint, w waiting on it from the start: its ctx keeps the request's
// values, not its end. early is the answers the client sent with it, bind
// what its requestStates are bound to.
func (e *Endpoint) startHeld(ctx context.Context, user string, w *heldWaiter, early mcp.InputResponses, bind func() []byte,
	run func(context.Context) (*mcp.CallToolResult, error)) (*heldCall, error) {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(e.held.life, cancel)
	h := &heldCall{id: newCallID(), user: user, cancel: cancel, questions: map[string]*question{}, changed: make(chan struct{}), waiter: w,
		early: maps.Clone(early)}
	h.bind = sync.OnceValue(bind)
	rctx = context.WithValue(rctx, heldKey{}, h)
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
			h.finish(res, err)
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
	args, _ := arguments(req) // a bad one never runs: it binds as null
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
	w := &heldWaiter{ctx: ctx, progress: e.progressEmitter(ctx, req)}
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
		return h.missingCapability(p.reply, res, err)
	}
	if p.support == string(mcp.TaskSupportRequired) && !p.declared {
		return nil, e.errNeedsTasks(p, clientToolName(req))
	}
	h, err := e.startCall(ctx, req, user, w)
	if err != nil {
		return nil, err
	}
	res, err := e.awaitTask(ctx, h, w, p)
	return h.missingCapability(p.reply, res, err)
}

// resumeHeld hands the answers rs of a retry of user with requestState
// text, bound to bind, to its held call and returns the call, to be
// waited on; or, with a nil call, the retry's answer: its refusal (again
// says what to do instead), or the outcome the replica holding the call
// gave, which may have made it a task under p.
func (e *Endpoint) resumeHeld(ctx context.Context, user, text string, bind []byte, rs mcp.InputResponses, p taskPolicy,
	again string) (*heldCall, *mcp.CallToolResult, error) {
	st, err := e.sealer.OpenFor(text, user, bind, time.Now())
	if err != nil {
		return nil, nil, err
	}
	if st.Replica != e.tag {
		res, err := e.retryElsewhere(ctx, st, text, rs, p)
		return nil, res, err
	}
	h := e.held.get(st.Call)
	if h == nil || h.user != user {
		return nil, nil, fmt.Errorf("%w: it ended, or waited longer than %v for these answers: %s", ErrCallGone, e.opts.InputWait, again)
	}
	if err := h.answer(st.Round, rs); err != nil {
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
func (h *heldCall) missingCapability(reply *taskReply, res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error) {
	h.mu.Lock()
	missing := h.missing
	h.mu.Unlock()
	if missing == "" || reply == nil || (err == nil && (res == nil || !res.IsError)) {
		return res, err
	}
	reply.setError(mcp.MISSING_REQUIRED_CLIENT_CAPABILITY,
		fmt.Sprintf("the tool's server asked for %s, which this client did not declare in its capabilities: declare it and call again", missing),
		map[string]any{"requiredCapabilities": map[string]any{missing: map[string]any{}}})
	return nil, mcp.MissingRequiredClientCapabilityError{Capability: missing}
}

// noteMissing records that the call's server asked for capability, which
// the client did not declare.
func (h *heldCall) noteMissing(capability string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.missing = capability
}

// await is awaitTask for a call that stays a call.
func (e *Endpoint) await(ctx context.Context, h *heldCall, w *heldWaiter) (*mcp.CallToolResult, error) {
	return e.awaitTask(ctx, h, w, taskPolicy{})
}

// claim makes w the request waiting on h, and leaves h.mu held; a call
// already gone is an error, with h.mu unlocked. A request waiting before
// gives way, and the lapse timer of a call left waiting for its retry
// stops.
func (h *heldCall) claim(w *heldWaiter) error {
	h.mu.Lock()
	if h.gone {
		h.mu.Unlock()
		return fmt.Errorf("%w: call the tool again", ErrCallGone)
	}
	if h.lapse != nil {
		h.lapse.Stop()
		h.lapse = nil
	}
	if h.waiter != w {
		h.waiter = w
		h.signalLocked()
	}
	return nil
}

// abandon ends h when w, the request waiting on it, ended first (its
// client left) and the call is not done: it is cancelled and forgotten.
func (e *Endpoint) abandon(h *heldCall, w *heldWaiter) {
	h.mu.Lock()
	mine := h.waiter == w && !h.done
	if mine {
		h.waiter, h.gone = nil, true
	}
	h.mu.Unlock()
	if mine {
		h.cancel()
		e.held.forget(h)
	}
}

// inputRequired answers the request waiting on h with the questions it
// has for the client, and leaves the call waiting InputWait for the
// retry. h.mu is held, and unlocked.
func (e *Endpoint) inputRequired(h *heldCall) (*mcp.CallToolResult, error) {
	if h.round >= maxInputRounds {
		h.waiter, h.gone = nil, true
		h.mu.Unlock()
		h.cancel()
		e.held.forget(h)
		return nil, fmt.Errorf("the call asked its client for input %d times, the most it may: it was cancelled", maxInputRounds)
	}
	h.round++
	round := h.round
	reqs := make(mcp.InputRequests, len(h.questions))
	for key, q := range h.questions {
		reqs[key] = q.req
	}
	h.waiter = nil
	h.lapse = time.AfterFunc(e.opts.InputWait, func() { e.lapsed(h, round) })
	h.mu.Unlock()
	state := e.sealer.Seal(reqstate.State{Call: h.id, Replica: e.tag, Round: round, Expires: time.Now().Add(e.opts.InputWait).Unix(),
		User: reqstate.UserHash(h.user), Bind: h.bind()})
	return &mcp.CallToolResult{
		Result:               mcp.Result{ResultType: mcp.ResultTypeInputRequired},
		MultiRoundTripResult: mcp.MultiRoundTripResult{InputRequests: reqs, RequestState: state},
	}, nil
}

// lapsed cancels h when its client has not come back with the answers of
// round within InputWait.
func (e *Endpoint) lapsed(h *heldCall, round int) {
	h.mu.Lock()
	idle := h.waiter == nil && h.round == round && !h.gone
	if idle {
		h.gone = true
	}
	h.mu.Unlock()
	if !idle {
		return
	}
	e.logger.Info("a 2026-07-28 call's client did not answer in time: the call is cancelled", logKeyUser, h.user, "waited", e.opts.InputWait)
	h.cancel()
	e.held.forget(h)
}

// heldElicit puts an elicitation of the held call h to its client.
func (e *Endpoint) heldElicit(ctx context.Context, h *heldCall, params mcp.ElicitationParams, hint inputHint) (*mcp.ElicitationResult, error) {
	r, err := h.ask(ctx, e, mcp.NewElicitationInputRequest(params), hint)
	if err != nil {
		return nil, err
	}
	if r.Elicitation == nil {
		return nil, errors.New("the MCP client's answer is not an elicitation result")
	}
	return r.Elicitation, nil
}

// heldSample puts a sampling request of the held call h to its client.
func (e *Endpoint) heldSample(ctx context.Context, h *heldCall, req mcp.CreateMessageRequest, hint inputHint) (*mcp.CreateMessageResult, error) {
	r, err := h.ask(ctx, e, mcp.NewSamplingInputRequest(req.CreateMessageParams), hint)
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
