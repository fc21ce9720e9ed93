package mcpendpoint

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpendpoint/internal/held"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/tools"
)

// clientEmitter is the Emitter of a call made through the endpoint: its
// events go to progress (nil for none), and it is a tools.Asker whose
// questions (an upstream server's elicitation/create, a question during
// ask's run) go as elicitation/create to the MCP client that made the
// call, when it declared the elicitation capability; else they are
// declined, saying why. The gateway bounds each question by the server's
// elicitation_timeout and validates the answer before it goes upstream.
type clientEmitter struct {
	// call is the ctx of the client's tools/call: it carries the MCP
	// session (and the POST's stream) a question is sent on.
	call     context.Context //nolint:containedctx // the client's call, for the questions sent on its session
	srv      *mcpserver.MCPServer
	ep       *Endpoint
	progress tools.Emitter
	// urls maps the url-mode questions put to the client to the ids it
	// got, for their completion (ElicitationComplete); never nil.
	urls *sentURLs
	// levelRead reads the session's log level from the SessionStore once
	// per call, before its first log message (syncLevel); never nil.
	levelRead *sync.Once
	// held, for a 2026-07-28 call, is the call it runs (held.go): its
	// questions become input_required results, and its events go to the
	// client request waiting on it, if any.
	held *held.Call
}

var _ tools.Asker = clientEmitter{}

var _ mcpgateway.ElicitationCompleter = clientEmitter{}

var _ mcpgateway.ClientLogger = clientEmitter{}

// ClientProgressInterval is the least time between two sends of progress
// reports of one call to the MCP client: each send carries the reports
// that came meanwhile, up to mcpgateway.PacedBurst (more are coalesced
// into the latest), and the last is always sent before the result. The
// gateway's own pace (mcpgateway.ProgressInterval, the latest report
// only) is for a person's stream; a client may count the reports.
const ClientProgressInterval = 10 * time.Millisecond

var _ mcpgateway.ProgressPacer = clientEmitter{}

// ProgressPace is ClientProgressInterval (mcpgateway.ProgressPacer).
func (clientEmitter) ProgressPace() time.Duration { return ClientProgressInterval }

// Emit relays ev to the client: progress, if it asked for any, and the
// servers' log messages at the level the session set (logging/setLevel;
// error by default), each named after its server.
func (e clientEmitter) Emit(ev tools.Event) {
	call, progress := e.call, e.progress
	if e.held != nil {
		w := e.held.Current()
		if w == nil {
			return // nobody waits on the call now: missed
		}
		call, progress = w.Ctx, w.Progress
	}
	if le, ok := ev.Payload.(mcpgateway.ServerLogPayload); ok && ev.Type == mcpgateway.EventServerLog {
		level := mcp.LoggingLevel(le.Level)
		if !level.ShouldSendTo(mcp.LoggingLevelDebug) {
			level = mcp.LoggingLevelInfo // not a level the specification knows
		}
		logger := le.Server
		if le.Logger != "" {
			logger += "/" + le.Logger
		}
		e.levelRead.Do(func() { e.ep.hub.SyncLevel(call) })
		e.ep.hub.NotifyLog(call, mcp.NewLoggingMessageNotification(level, logger, le.Data))
		return
	}
	if progress != nil {
		progress.Emit(ev)
	}
}

var _ mcpgateway.RootsLister = clientEmitter{}

// ListRoots asks a 2026-07-28 client that declared roots for its roots, in
// an input_required result, when a server of its call asks for them and
// mcp.json gives it none; nil otherwise (the server gets none).
func (e clientEmitter) ListRoots(ctx context.Context) (*mcp.ListRootsResult, error) {
	info := mcpserver.RequestProtocolInfoFromContext(e.call)
	if e.held == nil || info == nil || info.ClientCapabilities == nil || info.ClientCapabilities.Roots == nil {
		return nil, nil //nolint:nilnil // no roots and no error: the server gets none (session.RootsLister)
	}
	rctx, cancel := context.WithCancel(e.call)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	r, err := e.ep.heldAsk(rctx, e.held, mcp.NewRootsInputRequest(), hintOf(ctx))
	if err != nil {
		return nil, err
	}
	if r.Roots == nil {
		return nil, errors.New("the MCP client's answer is not a roots/list result")
	}
	return r.Roots, nil
}

var _ mcpgateway.CapabilityNoter = clientEmitter{}

// MissingCapability notes, for a 2026-07-28 call, that its server asked
// for capability, which the client did not declare: the call's failure
// then says so (-32021).
func (e clientEmitter) MissingCapability(capability string) {
	if e.held != nil {
		e.held.NoteMissing(capability)
	}
}

// TakesServerLogs marks the emitter a mcpgateway.ClientLogger.
func (clientEmitter) TakesServerLogs() {}

// Ask puts q to the client as elicitation/create (of a 2026-07-28 call:
// in an input_required result) and waits for its answer, or ctx (the
// gateway's elicitation_timeout), or the end of the call.
func (e clientEmitter) Ask(ctx context.Context, q tools.Question) (tools.Answer, error) {
	p := q.Payload
	if reason := e.cannotAsk(p.Mode); reason != "" {
		return tools.Answer{Action: tools.ElicitDecline, Reason: reason}, nil
	}
	params := mcp.ElicitationParams{Mode: p.Mode, Message: askedBy(p)}
	if p.Mode == mcp.ElicitationModeURL {
		params.URL, params.ElicitationID = p.URL, "eli-"+tools.NewID()
		e.urls.add(p.Server, p.ServerElicitationID, params.ElicitationID)
	} else {
		params.RequestedSchema = p.RequestedSchema
	}
	params.Meta = mcp.NewMetaFromMap(map[string]any{"dev.elysia/server": p.Server, "dev.elysia/tool": p.Tool})
	// The request goes on the call's session; it ends with ctx too.
	rctx, cancel := context.WithCancel(e.call)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	var (
		res *mcp.ElicitationResult
		err error
	)
	if e.held != nil {
		res, err = e.ep.heldElicit(rctx, e.held, params, hintOf(ctx))
	} else {
		res, err = e.srv.RequestElicitation(rctx, mcp.ElicitationRequest{
			Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)},
			Params:  params,
		})
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return tools.Answer{}, ctx.Err()
	case errors.Is(err, mcpserver.ErrElicitationNotSupported):
		return tools.Answer{Action: tools.ElicitDecline, Reason: "the MCP client's transport cannot take questions"}, nil
	case errors.Is(err, errTooManyHeld):
		return tools.Answer{Action: tools.ElicitDecline, Reason: err.Error()}, nil
	case err != nil:
		if e.call.Err() != nil {
			return tools.Answer{}, e.call.Err()
		}
		// What the client said is its own; the server learns only that
		// the client failed.
		return tools.Answer{Action: tools.ElicitDecline, Reason: "the MCP client answered the question with an error"}, nil
	}
	switch res.Action {
	case mcp.ElicitationResponseActionAccept:
		content, _ := res.Content.(map[string]any)
		if q.Check != nil {
			checked, err := q.Check(content)
			if err != nil {
				return tools.Answer{Action: tools.ElicitDecline, Reason: "the MCP client's answer does not match the form: " + err.Error()}, nil
			}
			content = checked
		}
		return tools.Answer{Action: tools.ElicitAccept, Content: content}, nil
	case mcp.ElicitationResponseActionCancel:
		return tools.Answer{Action: tools.ElicitCancel}, nil
	case mcp.ElicitationResponseActionDecline:
		return tools.Answer{Action: tools.ElicitDecline}, nil
	}
	return tools.Answer{Action: tools.ElicitDecline, Reason: "the MCP client answered with an unknown action"}, nil
}

// cannotAsk says why the call's client cannot take a question of mode, or
// "" when it can: it must have declared elicitation (form mode by
// default, url mode by name).
func (e clientEmitter) cannotAsk(mode string) string {
	s, ok := mcpserver.ClientSessionFromContext(e.call).(mcpserver.SessionWithClientInfo)
	if !ok {
		return "the MCP client's session cannot take questions"
	}
	c := s.GetClientCapabilities().Elicitation
	switch {
	case mode == tools.ElicitSampling:
		return "an MCP client is not asked to approve sampling requests"
	case c == nil:
		return "the MCP client did not declare the elicitation capability"
	case mode == mcp.ElicitationModeURL && c.URL == nil:
		return "the MCP client did not declare url-mode elicitation"
	case mode != mcp.ElicitationModeURL && c.URL != nil && c.Form == nil:
		return "the MCP client declared url-mode elicitation only"
	}
	return ""
}

// askedBy is the question's message as the client shows it: naming the
// server that asks, since the client sees only this endpoint.
func askedBy(p tools.ElicitationPayload) string {
	if p.Server == "" {
		return p.Message
	}
	return fmt.Sprintf("%s asks: %s", p.Server, p.Message)
}

// samplingEmitter is the clientEmitter of a call whose client declared
// sampling: a server's sampling/createMessage during the call goes to
// that client (mcpgateway.ClientSampler) rather than the service's model;
// to a 2026-07-28 client, in an input_required result.
type samplingEmitter struct{ clientEmitter }

var _ mcpgateway.ClientSampler = samplingEmitter{}

// CreateMessage sends req to the client that made the call and waits for
// its message, or ctx.
func (e samplingEmitter) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	rctx, cancel := context.WithCancel(e.call)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	req.Method = string(mcp.MethodSamplingCreateMessage)
	if e.held != nil {
		return e.ep.heldSample(rctx, e.held, req, hintOf(ctx))
	}
	return e.ep.hub.Sample(rctx, req)
}

// callEmitter is the Emitter of the tools/call in ctx: it relays progress
// to the client, puts questions to it, and gives it the servers' sampling
// requests when it declared sampling.
func (e *Endpoint) callEmitter(ctx context.Context, req mcp.CallToolRequest) tools.Emitter {
	ce := clientEmitter{call: ctx, srv: e.srv, ep: e, urls: &sentURLs{}, levelRead: &sync.Once{}, held: held.FromContext(ctx)}
	if ce.held == nil {
		ce.progress = e.progressEmitter(ctx, req)
	}
	if s, ok := mcpserver.ClientSessionFromContext(ctx).(mcpserver.SessionWithClientInfo); ok && s.GetClientCapabilities().Sampling != nil {
		if _, ok := s.(mcpserver.SessionWithSampling); ok {
			return samplingEmitter{ce}
		}
	}
	return ce
}
