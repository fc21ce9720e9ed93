package mcpgateway

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/tools"
)

// clientStream is the emitter of a call whose caller writes the server's
// sampling requests itself (ClientSampler).
type clientStream struct {
	mu  sync.Mutex
	got []mcp.CreateMessageParams
}

func (c *clientStream) Emit(tools.Event) {}

func (c *clientStream) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	c.mu.Lock()
	c.got = append(c.got, req.CreateMessageParams)
	c.mu.Unlock()
	return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("the caller's message")},
		Model: "caller", StopReason: "endTurn"}, nil
}

// TestSamplingGoesToTheCallersClient: with "sampling" off, a server's
// sampling request during a call whose emitter is a ClientSampler goes to
// it, not to the service's model, and its message goes back to the server.
func TestSamplingGoesToTheCallersClient(t *testing.T) {
	var model atomic.Bool
	g := newGateway(t, everythingStdio(t), &Options{Sampler: samplerFunc(func(context.Context, session.SampleRequest) (session.SampleResult, error) {
		model.Store(true)
		return session.SampleResult{Text: "the service's model"}, nil
	})})
	cs := &clientStream{}
	res, err := g.ExecuteWith(t.Context(), "trigger-sampling-request", map[string]any{"prompt": "write a haiku", "maxTokens": 50}, cs)
	if err != nil || res.IsError || !strings.Contains(res.llmText, "the caller's message") {
		t.Fatalf("result %+v, %v: want the caller's message", res, err)
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if len(cs.got) != 1 || cs.got[0].MaxTokens != 50 || model.Load() {
		t.Errorf("the caller got %+v (the model was asked: %v), want the server's one request", cs.got, model.Load())
	}
}
