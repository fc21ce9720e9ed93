package mcpgateway

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

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

// ErrSamplingOff is matched by the error a server gets when it asks for
// sampling without "sampling": true in mcp.json.
var ErrSamplingOff = errors.New(`sampling is not enabled for this server (set "sampling": true in mcp.json)`)

// sampling answers sampling/createMessage through the Sampler, only for a
// server configured with "sampling": true; the call that caused it, when
// known, gets a status event saying the server used the model.
type sampling struct {
	c *conn
	s *session
}

// CreateMessage implements mcp-go's client.SamplingHandler.
func (h sampling) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	c := h.c
	if !c.cfg.Sampling {
		c.logger.InfoContext(ctx, "sampling refused: not enabled")
		return nil, ErrSamplingOff
	}
	if c.opts.Sampler == nil {
		return nil, errors.New("sampling: no model is configured in this service")
	}
	p := req.CreateMessageParams
	sr := SampleRequest{Server: c.cfg.Name, SystemPrompt: p.SystemPrompt, MaxTokens: min(max(p.MaxTokens, 1), MaxSampleTokens),
		Temperature: p.Temperature, StopSequences: p.StopSequences}
	if len(p.Messages) == 0 {
		return nil, errors.New("sampling: no messages")
	}
	for _, m := range p.Messages {
		sr.Messages = append(sr.Messages, SampleMessage{Role: string(m.Role), Text: sampleText(m.Content)})
	}
	if p.ModelPreferences != nil {
		for _, h := range p.ModelPreferences.Hints {
			sr.ModelHints = append(sr.ModelHints, h.Name)
		}
	}
	if ac := h.s.callFor(ctx); ac != nil {
		ac.emit.Emit(ctx, tools.NewStatus(fmt.Sprintf("%s asked the model to write a message for %s...", c.cfg.Name, ac.tool)))
	}
	res, err := c.opts.Sampler.Sample(ctx, sr)
	if err != nil {
		return nil, fmt.Errorf("sampling: %w", err)
	}
	c.logger.InfoContext(ctx, "sampling answered", "model", res.Model, "max_tokens", sr.MaxTokens)
	stop := res.StopReason
	if stop == "" {
		stop = "endTurn"
	}
	return &mcp.CreateMessageResult{
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent(res.Text)},
		Model:           res.Model,
		StopReason:      stop,
	}, nil
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

// roots answers roots/list with the configured roots as file:// URIs.
type roots struct{ c *conn }

// ListRoots implements mcp-go's client.RootsHandler.
func (r roots) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	out := &mcp.ListRootsResult{Roots: []mcp.Root{}}
	for _, p := range r.c.currentRoots() {
		u := url.URL{Scheme: "file", Path: filepath.ToSlash(p)}
		out.Roots = append(out.Roots, mcp.Root{URI: u.String(), Name: filepath.Base(p)})
	}
	return out, nil
}
