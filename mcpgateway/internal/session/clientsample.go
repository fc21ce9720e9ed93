package session

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/tools"
)

// ClientSampler is implemented by the Emitter of a call whose caller
// writes a server's sampling/createMessage itself: an MCP client that
// declared sampling, calling through the aggregate endpoint. A server's
// sampling request during such a call goes to it as is, whatever the
// server's "sampling" says, instead of to the service's model; the
// request must still fit sampling_max_input, and at most
// sampling_per_call are passed on per call. It must honour ctx.
type ClientSampler interface {
	tools.Emitter
	CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)
}

// CapabilityNoter is implemented by the Emitter of a call made for an MCP
// client: it hears that a server's request during the call went
// unanswered because the client did not declare a capability
// ("sampling"), so that a call that then fails can say so.
type CapabilityNoter interface {
	MissingCapability(name string)
}

// callerSamplingKey is the context key of WithCallerSampling.
type callerSamplingKey struct{}

// callerSampling is what WithCallerSampling records: nil when the caller
// cannot sample.
type callerSampling struct{ cs ClientSampler }

// WithCallerSampling marks the tool calls made with ctx as made for a
// caller other than the call's Emitter: the MCP client of the aggregate
// endpoint's ask tool, whose calls the decision tree makes. A server's
// sampling request during such a call goes to cs, as it would to a
// ClientSampler Emitter. With a nil cs (the client did not declare
// sampling) it goes to the service's model only where the server's
// "sampling" is "auto": where it is "ask" nobody could approve it, so it
// is refused.
func WithCallerSampling(ctx context.Context, cs ClientSampler) context.Context {
	return context.WithValue(ctx, callerSamplingKey{}, callerSampling{cs})
}

// callerSamplerOf returns the ClientSampler that takes ac's sampling
// requests, and whether ac was made for a caller that cannot sample.
func callerSamplerOf(ac *activeCall) (ClientSampler, bool) {
	if cs, ok := ac.emit.(ClientSampler); ok {
		return cs, false
	}
	v, ok := ac.clock.ctx.Value(callerSamplingKey{}).(callerSampling)
	return v.cs, ok && v.cs == nil
}

// toClient passes req to the call's ClientSampler, within the per-call and
// input caps, and ends it with the call.
func (h sampling) toClient(ctx context.Context, ac *activeCall, cs ClientSampler, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	c := h.c
	perCall, _, maxInput := c.cfg.SamplingLimits()
	refuse := func(reason string) (*mcp.CreateMessageResult, error) {
		c.logger.WarnContext(ctx, "sampling refused", "reason", reason, "to", "client")
		return nil, fmt.Errorf("%w: %s", ErrSamplingRefused, reason)
	}
	if _, err := sampleRequest(c.cfg.Name, req.CreateMessageParams, maxInput); err != nil {
		return refuse(err.Error())
	}
	if !ac.takeSample(perCall) {
		return refuse(fmt.Sprintf("at most %d sampling requests per tool call (sampling_per_call)", perCall))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ac.clock.ctx, cancel)
	defer stop()
	res, err := cs.CreateMessage(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("sampling by the MCP client: %w", err)
	}
	c.logger.InfoContext(ctx, "sampling answered by the MCP client", "model", res.Model, "tool", ac.tool)
	return res, nil
}
