package mcpgateway

import (
	"context"
	"encoding/json"
	"time"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/tools"
)

// Observer receives the outcome of every execute and every change of a
// server's circuit, so that cmd can feed metrics (Prometheus counters,
// latency histograms, a circuit-state gauge) without mcpgateway depending
// on a metrics library.
//
// Methods are called synchronously: ObserveCall on the caller's goroutine
// after the call ends, ObserveCircuit while the circuit holds its lock. They
// must be quick, must not block, must be safe for concurrent use, and must
// not call back into the gateway.
type Observer interface {
	// ObserveCall reports one execute of tool on server: status is
	// CallSuccess, CallFailure or CallTimeout, d how long it took.
	ObserveCall(server, tool, status string, d time.Duration)
	// ObserveCircuit reports that server's circuit is now state
	// (CircuitClosed, CircuitOpen or CircuitHalfOpen).
	ObserveCircuit(server, state string)
}

// StateObserver is an optional interface of an Options.Observer: one that
// implements it is also told of every change of a server's state, including
// those no call or reload is behind (a stdio process that dies, a failed
// health ping, a back-off that runs out, a session connecting), so that a
// UI or a gauge can follow them without polling Status.
//
// ObserveState is called on a goroutine the gateway owns, never while it
// holds a lock, and one call at a time for each session owner: in the order
// the changes happened, with changes that come faster than the observer
// takes them coalesced, so a passing state (connecting) may be skipped but
// the last call always carries the current state. state is the state Status
// reports, except that connected stays connected when calls fail (ObserveCall
// reports those) and closed is never reported. A server with a session per
// user reports each user's session under the server's name. ObserveState
// must be quick, must not block (Close waits for it), must be safe for
// concurrent use, and must not call back into the gateway.
type StateObserver interface {
	ObserveState(server string, state session.State)
}

// ToolsObserver is an optional interface of an Options.Observer: one that
// implements it is told when a listing of server's tools brings other tool
// names than the last one (the first listing, and one after the server's
// notifications/tools/list_changed), so that the aggregate MCP endpoint can
// tell its clients. It is called on the goroutine that listed, never while
// the gateway holds a lock; it must be quick, must not block, must be safe
// for concurrent use, and must not call back into the gateway.
type ToolsObserver interface {
	ObserveTools(server string)
}

// Call statuses, as logged and given to Observer.ObserveCall.
const (
	CallSuccess = "success"
	CallFailure = "failure" // any failure but a timeout: transport, isError, bad inputs, circuit open...
	CallTimeout = "timeout"
)

// callMeta identifies who a call is for, in logs. Empty when Execute is
// called directly rather than through Run.
type callMeta struct {
	requestID    string
	user         string
	conversation string
	// emit receives the server's messages during the call (progress,
	// questions through tools.Asker, warnings); nil means nobody listens.
	emit tools.Emitter
	// task: the tool runs only as a task (callTask).
	task bool
	// schema is the tool's input schema when it marks parameters
	// x-mcp-header (session.Call.Schema); nil otherwise.
	schema json.RawMessage
}

func (o outcome) status() string {
	switch o {
	case outcomeSuccess:
		return CallSuccess
	case outcomeTimeout:
		return CallTimeout
	default:
		return CallFailure
	}
}

// logCall logs one gateway call at Info with the keys DESIGN.md lists
// ("Live config, health, observability"): the server's name comes from
// g.logger's scope; err is masked.
func (g *Gateway) logCall(ctx context.Context, cm callMeta, action, tool, status string, d time.Duration, err error) {
	attrs := []any{
		"request_id", cm.requestID,
		logKeyUser, cm.user,
		"conversation", cm.conversation,
		"action", action,
		logKeyTool, tool,
		"duration", d,
		"status", status,
	}
	if err != nil {
		attrs = append(attrs, logKeyErr, g.mask(err.Error()))
	}
	g.logger.InfoContext(ctx, "tool call", attrs...)
}

// observeCall reports an execute to the log and the Observer.
func (g *Gateway) observeCall(ctx context.Context, cm callMeta, tool string, o outcome, d time.Duration, err error) {
	status := o.status()
	g.logCall(ctx, cm, "execute", tool, status, d, err)
	if g.opts.Observer != nil {
		g.opts.Observer.ObserveCall(g.cfg.Name, tool, status, d)
	}
}
