package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/internal/testenv"
)

// TestMCPEndpointAskSampling: a server's sampling request during the
// agent's run (the ask tool) goes to the MCP client that called ask when it
// declared sampling; else the service's model writes it where the
// server's "sampling" is "auto", and it is refused where it is "ask",
// without a question to the client, since nobody can approve it.
func TestMCPEndpointAskSampling(t *testing.T) {
	sample := call("mcp_everything", map[string]any{"action": "execute", "tool_name": "trigger-sampling-request",
		"tool_inputs": map[string]any{"prompt": "a haiku", "maxTokens": 50}})
	service := func(t *testing.T, mode string, script ...reply) (*serviceProc, *fakeLLM) {
		t.Helper()
		llm := newFakeLLM(t, script...)
		return startService(t, serveOptions{Env: llm.Env(), Config: fmt.Sprintf(
			`{"servers": {"everything": {"command": "node", "args": [%q, "stdio"], "sampling": %q}}}`, testenv.Everything(t), mode)}), llm
	}
	askQuestion := func(t *testing.T, c *mcpclient.Client) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
		defer cancel()
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "ask", map[string]any{"question": "write me a haiku"}
		res, err := c.CallTool(ctx, req)
		if err != nil || res.IsError {
			t.Fatalf("ask: %v %s", err, jsonOf(res))
		}
		return jsonOf(res.StructuredContent)
	}
	var mu sync.Mutex
	var asked []string
	record := func(what string) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, what)
	}
	// mcp-go's client declares sampling when it has a sampling handler.
	elicits := mcpclient.WithElicitationHandler(elicitFunc(func(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		record("elicitation " + req.Params.Mode)
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept}}, nil
	}))
	samples := mcpclient.WithSamplingHandler(sampleFunc(func(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		record("sampling")
		return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant,
			Content: mcp.NewTextContent("the client's haiku")}, Model: "client-model", StopReason: "endTurn"}, nil
	}))
	check := func(t *testing.T, llm *fakeLLM, calls int, want ...string) {
		t.Helper()
		mu.Lock()
		got := strings.Join(asked, ",")
		asked = nil
		mu.Unlock()
		if got != strings.Join(want, ",") {
			t.Errorf("the client was asked %q, want %q", got, want)
		}
		if n, over := len(llm.Requests()), llm.Overruns(); n != calls || over != 0 {
			t.Errorf("the model was asked %d times (%d past the script), want %d", n, over, calls)
		}
	}
	withSampling := mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}, Elicitation: &mcp.ElicitationCapability{}}
	withoutSampling := mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}

	t.Run("auto", func(t *testing.T) {
		s, llm := service(t, "auto", sample, answer("done"), sample, reply{Content: "an old silent pond"}, answer("done"))
		c := capsClient(t, s.URL, withSampling, samples, elicits)
		if got := askQuestion(t, c); !strings.Contains(got, "the client's haiku") {
			t.Errorf("ask's result objects lack the client's message: %s", got)
		}
		check(t, llm, 2, "sampling")
		c = capsClient(t, s.URL, withoutSampling, elicits)
		if got := askQuestion(t, c); !strings.Contains(got, "an old silent pond") {
			t.Errorf("ask's result objects lack the model's message: %s", got)
		}
		check(t, llm, 5)
	})

	t.Run("ask", func(t *testing.T) {
		s, llm := service(t, "ask", sample, answer("done"))
		c := capsClient(t, s.URL, withoutSampling, elicits)
		askQuestion(t, c)
		check(t, llm, 2)
		reqs := llm.Requests()
		if last := jsonOf(reqs[len(reqs)-1].Context(t)); !strings.Contains(last, "nobody can approve the request") {
			t.Errorf("the model was not told why the sampling was refused: %s", last)
		}
	})
}
