package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"syscall"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/tools"
)

// Call is one tools/call for CallTool.
type Call struct {
	Tool   string
	Inputs map[string]any
	// User is whom the call is for: the server's messages during it (log
	// lines, questions) are theirs.
	User string
	// Emit receives what the server says during the call: progress as
	// status events, questions through its tools.Asker when it has one
	// (else they are declined), warnings. Nil means nobody listens.
	Emit tools.Emitter
	// Task: the server runs the tool only as a task (2025-11-25).
	Task bool
	// Schema is the tool's input schema as listed when it has x-mcp-header
	// annotations (ParamHeaders), else nil: on a 2026-07-28 connection
	// over HTTP the annotated arguments travel in Mcp-Param-* headers too.
	Schema json.RawMessage
}

// ErrRetry is matched (with errors.Is) by a CallError after which a new
// session may run the call again at once: the request never reached a
// server that could run it.
var ErrRetry = errors.New("retry on a new session")

// CallError is a failed tools/call. It unwraps to the error.
type CallError struct {
	Err error
	// Session is the session the call failed on; nil when none was had.
	Session *Session
	// retry: see ErrRetry.
	retry bool
}

func (e *CallError) Error() string { return e.Err.Error() }

// Unwrap returns the call's error.
func (e *CallError) Unwrap() error { return e.Err }

// Is reports whether target is ErrRetry and the call may be run again.
func (e *CallError) Is(target error) bool { return e.retry && target == ErrRetry }

// CallTool sends call as one tools/call on s. It carries a progress token:
// progress goes to call.Emit and moves the deadline on (call_timeout after
// the last report, max_call_time at most); questions and messages the
// server sends during the call reach call.User only. A failure is a
// *CallError; a session found gone is retired.
func (c *Conn) CallTool(ctx context.Context, s *Session, call Call) (res *mcp.CallToolResult, err error) {
	clock := c.progressCtx(ctx)
	defer clock.stop()
	cctx := clock.ctx
	emit := call.Emit
	if emit == nil {
		emit = tools.Discard
	}
	// progress starts below any report, so that a first report of 0 counts.
	ac := &activeCall{token: c.progressToken(), server: c.cfg.Name, tool: call.Tool, progress: math.Inf(-1),
		user: call.User, emit: emit, clock: clock, relay: newRelay(emit)}
	defer ac.relay.close() // after untrack: the call's last messages go out before its result
	defer s.track(ac)()
	cctx, span := startMCP(cctx, c.cfg.Name, s, string(mcp.MethodToolsCall), call.Tool)
	defer func() { endMCP(span, err, res != nil && res.IsError) }()
	if call.Task && !mcp.IsModernProtocol(s.protocol) {
		// Tasks as 2025-11-25 defines them; the 2026-07-28 core changes
		// them, and mcp-go's typed call handles its multi-round results.
		res, err = c.callTask(withCall(cctx, ac), s, ac, call.Tool, call.Inputs)
	} else {
		req := mcp.CallToolRequest{}
		req.Params.Name = call.Tool
		req.Params.Arguments = call.Inputs
		req.Params.Meta = &mcp.Meta{ProgressToken: ac.token, AdditionalFields: traceMeta(cctx)}
		req.Header = paramHeaders(s, call)
		stop := s.WedgeGuard(cctx, "call "+call.Tool)
		if mcp.IsModernProtocol(s.protocol) {
			res, err = s.client.CallTool(withInputRound(withCall(cctx, ac)), req)
		} else {
			res, err = c.callTool(withCall(cctx, ac), s, req.Params, req.Header)
		}
		stop()
	}
	if err == nil {
		return res, nil
	}
	err = inputRoundsErr(err)
	if IsSessionGone(err) {
		s.MarkDead(err)
		err = s.Cause(err)
		c.Retire(s)
		// A 404 means the server never ran the request; but the polls of a
		// task the server created come after it started working.
		if sentNothing(err) && cctx.Err() == nil && !isTaskStarted(err) {
			return nil, &CallError{Err: err, retry: true}
		}
	}
	return nil, &CallError{Err: c.timedOut(ctx, cctx, err), Session: s}
}

// timedOut says which bound err, the failure of a request made under
// cctx (a progressCtx of the caller's ctx), ran into, when it was one.
func (c *Conn) timedOut(ctx, cctx context.Context, err error) error {
	cause := context.Cause(cctx)
	if cctx.Err() == nil || ctx.Err() != nil || !errors.Is(cause, context.DeadlineExceeded) {
		return err
	}
	_, timeout := c.cfg.Timeouts()
	maxCall, _ := c.cfg.Limits()
	limit := fmt.Sprintf("call_timeout %v", timeout)
	if errors.Is(cause, errMaxCallTime) {
		limit = fmt.Sprintf("max_call_time %v", maxCall)
	}
	return fmt.Errorf("no answer within %s: %w (%w)", limit, err, context.DeadlineExceeded)
}

// Do runs f, one request other than tools/call, on the live session
// (connecting if there is none), bounded by call_timeout; a session found
// gone is retired, and the error names the server and op, masked.
func (c *Conn) Do(ctx context.Context, op string, f func(ctx context.Context, s *Session) error) error {
	return c.do(ctx, op, true, f)
}

// DoAsking is Do for a request whose server may put questions to its
// caller (GetPrompt): f bounds it the way a tool call is bounded (idle
// call_timeout, paused while a person answers; max_call_time), not by a
// fixed call_timeout that would cut a person off, and guards the session
// against a server that stops reading on that bound (WedgeGuard).
func (c *Conn) DoAsking(ctx context.Context, op string, f func(ctx context.Context, s *Session) error) error {
	return c.do(ctx, op, false, f)
}

func (c *Conn) do(ctx context.Context, op string, bounded bool, f func(ctx context.Context, s *Session) error) error {
	s, err := c.Session(ctx)
	if err != nil {
		return err
	}
	_, timeout := c.cfg.Timeouts()
	// An asking request (not bounded) is bounded by f, which guards it on
	// its own deadline.
	cctx, cancel, stop := ctx, context.CancelFunc(func() {}), func() {}
	if bounded {
		cctx, cancel = c.CallCtx(ctx, timeout)
		stop = s.WedgeGuard(cctx, op)
	}
	defer cancel()
	// No user's call: what the server asks during the request (a
	// 2026-07-28 input_required) is declined, never put to whichever
	// call happens to be in flight.
	err = f(withCall(cctx, nil), s)
	stop()
	if err == nil {
		return nil
	}
	err = inputRoundsErr(err)
	if IsSessionGone(err) {
		s.MarkDead(err)
		err = s.Cause(err)
		c.Retire(s)
	}
	if cctx.Err() == context.DeadlineExceeded && ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within call_timeout %v: %w (%w)", timeout, err, context.DeadlineExceeded)
	}
	return c.CallErr(ctx, op, err)
}

// IsServerAnswer reports whether err is a JSON-RPC error the server sent:
// the server is alive and ran (or refused) the request.
func IsServerAnswer(err error) bool {
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

// inputRoundsErr says what mcp-go's ErrMaxInputRoundTripsExceeded means:
// a 2026-07-28 server that kept asking for input.
func inputRoundsErr(err error) error {
	if !errors.Is(err, mcpclient.ErrMaxInputRoundTripsExceeded) {
		return err
	}
	return fmt.Errorf("the server still asked for input after %d requests; given up: %w", MaxInputRounds, err)
}

// progressToken returns a new progress token of the conn's, the id of a
// call in flight: "elysia-N".
func (c *Conn) progressToken() string {
	return "elysia-" + strconv.FormatInt(c.seq.Add(1), 10)
}
