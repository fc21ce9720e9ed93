package mcpgateway

import (
	"context"
	"time"

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
// ("Live config, health, observability"); err is masked.
func (g *Gateway) logCall(ctx context.Context, cm callMeta, action, tool, status string, d time.Duration, err error) {
	attrs := []any{
		"request_id", cm.requestID,
		"user", cm.user,
		"conversation", cm.conversation,
		"server", g.cfg.Name,
		"action", action,
		"tool", tool,
		"duration", d,
		"status", status,
	}
	if err != nil {
		attrs = append(attrs, "err", g.mask(err.Error()))
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
