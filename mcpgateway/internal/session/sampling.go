package session

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

// Sampler writes a message with the service's model for a server's
// sampling/createMessage. cmd wires the configured model (or the offline
// planner) behind it. It must be safe for concurrent use and honour ctx.
type Sampler interface {
	Sample(ctx context.Context, req SampleRequest) (SampleResult, error)
}

// SampleRequest is a server's sampling request, text only.
type SampleRequest struct {
	// Server is the name of the asking server.
	Server       string
	SystemPrompt string
	// Messages alternate "user" and "assistant"; non-text content is
	// described in a line.
	Messages      []SampleMessage
	MaxTokens     int // at most MaxSampleTokens
	Temperature   float64
	StopSequences []string
	// ModelHints are the server's model-name hints, best first.
	ModelHints []string
}

// SampleMessage is one message of a SampleRequest.
type SampleMessage struct {
	Role string
	Text string
}

// SampleResult is the model's reply.
type SampleResult struct {
	Text       string
	Model      string
	StopReason string
}

// MaxSampleTokens bounds a sampling request's maxTokens, whatever the server
// asks for.
const MaxSampleTokens = 4096

// Bounds of a sampling request's lists, whatever sampling_max_input allows.
const (
	maxSampleMessages = 256
	maxSampleStops    = 16
	maxSampleHints    = 8
)

// sampling answers sampling/createMessage through the Sampler, only for a
// server configured with "sampling", and only during a tools/call of a
// user on the session, which it is attributed to as elicitation is
// (callFor). With "ask" the call's user approves the request and then the
// reply (see ask); with "auto" the call gets a status event before, and one
// with the request and the reply after. The model's work ends with the call. Each request is capped: its
// input (sampling_max_input), the requests of one call (sampling_per_call)
// and of a minute (sampling_per_minute). A refusal is a JSON-RPC error to
// the server, and a log line.
type sampling struct {
	c *Conn
	s *Session
}

// CreateMessage implements mcp-go's client.SamplingHandler.
func (h sampling) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	c := h.c
	ctx = claimInputKey(ctx, mcp.MethodSamplingCreateMessage, req.CreateMessageParams)
	if ac := h.s.callFor(ctx); ac != nil {
		switch cs, cannot := callerSamplerOf(ac); {
		case cs != nil:
			return h.toClient(ctx, ac, cs, req)
		case cannot && c.cfg.Sampling == mcpconfig.SamplingAsk:
			return nil, c.refuseSampling(ctx, `the MCP client that asked did not declare sampling, and with "sampling": "ask" nobody can approve the request`)
		case cannot && (!c.cfg.Sampling.Enabled() || c.opts.Sampler == nil):
			c.logger.InfoContext(ctx, "sampling refused: the MCP client did not declare sampling, and the server's is off")
			if n, ok := ac.emit.(CapabilityNoter); ok {
				n.MissingCapability("sampling")
			}
			return nil, ErrCallerCannotSample
		}
	}
	if !c.cfg.Sampling.Enabled() {
		c.logger.InfoContext(ctx, "sampling refused: not enabled")
		return nil, ErrSamplingOff
	}
	if c.opts.Sampler == nil {
		return nil, errors.New("sampling: no model is configured in this service")
	}
	refuse := func(reason string) (*mcp.CreateMessageResult, error) {
		return nil, c.refuseSampling(ctx, reason)
	}
	ac := h.s.callFor(ctx)
	if ac == nil {
		return refuse("no tools/call of a user is in flight on this session (or several are and the request names none); a server may ask the model only while it works on a call")
	}
	perCall, perMinute, maxInput := c.cfg.SamplingLimits()
	sr, err := sampleRequest(c.cfg.Name, req.CreateMessageParams, maxInput)
	if err != nil {
		return refuse(err.Error())
	}
	if !ac.takeSample(perCall) {
		return refuse(fmt.Sprintf("at most %d sampling requests per tool call (sampling_per_call)", perCall))
	}
	if !c.opts.Samples.take(time.Now(), perMinute) {
		return refuse(fmt.Sprintf("at most %d sampling requests per minute (sampling_per_minute)", perMinute))
	}
	show := c.sampleShown(sr, ac.tool)
	if c.cfg.Sampling == mcpconfig.SamplingAsk {
		return h.ask(ctx, ac, sr, show)
	}
	ac.emit.Emit(tools.NewStatus(fmt.Sprintf("%s asked the model to write a message for %s...", c.cfg.Name, ac.tool)))
	res, err := h.sample(ctx, ac, sr)
	if err != nil {
		return nil, err
	}
	// Unattended: the user sees afterwards what was asked and answered.
	show.Stage, show.Model = tools.SamplingDone, truncate(res.Model, 100)
	show.Reply, show.Truncated = c.shownText(res.Text, show.Truncated)
	show.Text = fmt.Sprintf("%s had the model write a message for %s (%d characters)", c.cfg.Name, ac.tool, len([]rune(res.Text)))
	ac.emit.Emit(tools.Event{Type: tools.EventStatus, Payload: show})
	return createResult(res), nil
}

// sample asks the model for sr on behalf of ac: its work ends with the call.
func (h sampling) sample(ctx context.Context, ac *activeCall, sr SampleRequest) (SampleResult, error) {
	// The model works for the call: on stdio, ctx is the session's.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ac.clock.ctx, cancel)
	defer stop()
	res, err := h.c.opts.Sampler.Sample(ctx, sr)
	if err != nil {
		return SampleResult{}, fmt.Errorf("sampling: %w", err)
	}
	h.c.logger.InfoContext(ctx, "sampling answered", "model", res.Model, "max_tokens", sr.MaxTokens, "tool", ac.tool)
	return res, nil
}

// createResult is res as the server gets it.
func createResult(res SampleResult) *mcp.CreateMessageResult {
	stopReason := res.StopReason
	if stopReason == "" {
		stopReason = "endTurn"
	}
	return &mcp.CreateMessageResult{
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent(res.Text)},
		Model:           res.Model,
		StopReason:      stopReason,
	}
}

// sampleRequest is p as the Sampler takes it, or why it is refused: no
// messages, too many, or an input (system prompt, messages and stop
// sequences) over maxInput bytes. maxTokens is bounded by MaxSampleTokens;
// model hints past maxSampleHints are dropped.
func sampleRequest(server string, p mcp.CreateMessageParams, maxInput int) (SampleRequest, error) {
	sr := SampleRequest{Server: server, SystemPrompt: p.SystemPrompt, MaxTokens: min(max(p.MaxTokens, 1), MaxSampleTokens),
		Temperature: p.Temperature, StopSequences: p.StopSequences}
	switch {
	case len(p.Messages) == 0:
		return sr, errors.New("no messages")
	case len(p.Messages) > maxSampleMessages:
		return sr, fmt.Errorf("%d messages, at most %d", len(p.Messages), maxSampleMessages)
	case len(p.StopSequences) > maxSampleStops:
		return sr, fmt.Errorf("%d stop sequences, at most %d", len(p.StopSequences), maxSampleStops)
	}
	size := len(p.SystemPrompt)
	for _, s := range p.StopSequences {
		size += len(s)
	}
	for _, m := range p.Messages {
		text := sampleText(m.Content)
		size += len(text)
		if size > maxInput {
			break
		}
		sr.Messages = append(sr.Messages, SampleMessage{Role: string(m.Role), Text: text})
	}
	if size > maxInput {
		return sr, fmt.Errorf("the input (messages, system prompt and stop sequences) is over the %s limit (sampling_max_input)", byteSize(maxInput))
	}
	if p.ModelPreferences != nil {
		for _, h := range p.ModelPreferences.Hints[:min(len(p.ModelPreferences.Hints), maxSampleHints)] {
			sr.ModelHints = append(sr.ModelHints, truncate(h.Name, 100))
		}
	}
	return sr, nil
}

// sampleText is the text of a sampling message's content: text as it is,
// anything else as a line naming it.
func sampleText(content any) string {
	switch c := content.(type) {
	case mcp.TextContent:
		return c.Text
	case *mcp.TextContent:
		return c.Text
	case map[string]any:
		if t, _ := c["type"].(string); t == "text" {
			s, _ := c["text"].(string)
			return s
		}
		return fmt.Sprintf("[%v content]", c["type"])
	case []any:
		var parts []string
		for _, item := range c {
			parts = append(parts, sampleText(item))
		}
		return strings.Join(parts, "\n")
	}
	return fmt.Sprintf("[%T content]", content)
}

// roots answers roots/list with the configured roots as file:// URIs;
// with none configured, with the roots of the MCP client whose call the
// server asks during, when it has some (RootsLister).
type roots struct {
	c *Conn
	s *Session
}

// RootsLister is implemented by the Emitter of a call whose caller may
// have roots of its own: the MCP client of the aggregate endpoint. A
// server's roots/list during the call, with no roots in mcp.json, gets
// the client's, or none when ListRoots returns nil and no error (the
// client did not declare roots). It must honour ctx.
type RootsLister interface {
	ListRoots(ctx context.Context) (*mcp.ListRootsResult, error)
}

// ownRoots reports whether ac's client may give its roots to the server:
// when the server asked within that call's request (2026-07-28: the
// answer goes to that request alone) or the session is that user's own.
// A session of an earlier version shared between users keeps roots as
// its state, so one user's client roots would become every user's.
func (r roots) ownRoots(ctx context.Context, ac *activeCall) bool {
	_, inRequest := ctx.Value(activeCallKey{}).(*activeCall)
	return inRequest || mcp.IsModernProtocol(r.s.protocol) || (r.c.opts.User != "" && ac.user == r.c.opts.User)
}

// maxClientRoots bounds the roots of a client passed on to a server.
const maxClientRoots = 256

// ListRoots implements mcp-go's client.RootsHandler.
func (r roots) ListRoots(ctx context.Context, _ mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	ctx = claimInputKey(ctx, mcp.MethodListRoots, nil)
	if len(r.c.Roots()) == 0 && r.s != nil {
		if ac := r.s.callFor(ctx); ac != nil && r.ownRoots(ctx, ac) {
			if rl, ok := ac.emit.(RootsLister); ok {
				res, err := rl.ListRoots(ctx)
				if err != nil {
					return nil, fmt.Errorf("roots/list: the MCP client's roots: %w", err)
				}
				if res != nil {
					out := &mcp.ListRootsResult{Roots: res.Roots[:min(len(res.Roots), maxClientRoots)]}
					if out.Roots == nil {
						out.Roots = []mcp.Root{}
					}
					return out, nil
				}
			}
		}
	}
	out := &mcp.ListRootsResult{Roots: []mcp.Root{}}
	for _, p := range r.c.Roots() {
		u := url.URL{Scheme: "file", Path: filepath.ToSlash(p)}
		out.Roots = append(out.Roots, mcp.Root{URI: u.String(), Name: filepath.Base(p)})
	}
	return out, nil
}

// SampleWindow counts a server's sampling requests of the last minute. It
// is safe for concurrent use.
type SampleWindow struct {
	mu    sync.Mutex
	times []time.Time // when each request of the last minute was taken, oldest first
}

// take records a request at now and reports true, or reports false when
// limit requests were taken in the minute before now.
func (w *SampleWindow) take(now time.Time, limit int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	keep := 0
	for keep < len(w.times) && now.Sub(w.times[keep]) >= time.Minute {
		keep++
	}
	w.times = append(w.times[:0], w.times[keep:]...)
	if len(w.times) >= limit {
		return false
	}
	w.times = append(w.times, now)
	return true
}

// takeSample counts one sampling request against the call's perCall and
// reports whether it was within it.
func (ac *activeCall) takeSample(perCall int) bool {
	ac.mu.Lock()
	defer ac.mu.Unlock()
	if ac.samples >= perCall {
		return false
	}
	ac.samples++
	return true
}
