package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/internal/testenv"
)

// capsClient connects mcp-go's Streamable HTTP client to url's /mcp
// declaring caps, with opts (handlers), and initializes it. It keeps the
// GET stream open, as mcp-go's server sends sampling requests only there.
func capsClient(t *testing.T, url string, caps mcp.ClientCapabilities, opts ...mcpclient.ClientOption) *mcpclient.Client {
	t.Helper()
	//lint:ignore SA1019 the GET stream of the protocol the endpoint serves (2025-11-25)
	tr, err := mcptransport.NewStreamableHTTP(url+"/mcp", mcptransport.WithContinuousListening()) //nolint:staticcheck // see above
	if err != nil {
		t.Fatal(err)
	}
	c := mcpclient.NewClient(tr, opts...)
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	req.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	req.Params.Capabilities = caps
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
}

// elicitFunc adapts a func to mcp-go's client.ElicitationHandler.
type elicitFunc func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error)

func (f elicitFunc) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return f(ctx, req)
}

func everythingServer(t *testing.T, extra string) string {
	t.Helper()
	return fmt.Sprintf(`"everything": {"type": "stdio", "command": "node", "args": [%q, "stdio"]%s}`, testenv.Everything(t), extra)
}

// TestMCPEndpointElicitation: server-everything's question during a call
// through /mcp reaches the MCP client that made the call, and its answer
// goes back upstream; a client without the capability gets a decline, and
// one that never answers gets one after elicitation_timeout.
func TestMCPEndpointElicitation(t *testing.T) {
	cfg := `{"expose": {"mode": "tools"}, "servers": {` + everythingServer(t, `, "elicitation_timeout": 1`) + `}}`
	s := startService(t, serveOptions{Config: cfg})
	const tool = "everything__trigger-elicitation-request"
	elicitCaps := mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}

	t.Run("answered by the client", func(t *testing.T) {
		var mu sync.Mutex
		var asked []mcp.ElicitationParams
		c := capsClient(t, s.URL, elicitCaps, mcpclient.WithElicitationHandler(elicitFunc(
			func(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
				mu.Lock()
				asked = append(asked, req.Params)
				mu.Unlock()
				return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
					Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"name": "Ada Lovelace"}}}, nil
			})))
		text, isErr := callText(t, c, tool, nil)
		if isErr {
			t.Fatalf("%s: %s", tool, text)
		}
		for _, want := range []string{"Ada Lovelace", "It was a dark and stormy night."} {
			if !strings.Contains(text, want) {
				t.Errorf("result %q lacks %q (the client's answer, with the schema's defaults)", text, want)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(asked) != 1 || !strings.HasPrefix(asked[0].Message, "everything asks: ") || asked[0].RequestedSchema == nil {
			t.Errorf("the client was asked %+v, want one form naming the server", asked)
		}
	})

	t.Run("declined without the capability", func(t *testing.T) {
		c := capsClient(t, s.URL, mcp.ClientCapabilities{})
		text, _ := callText(t, c, tool, nil)
		if !strings.Contains(strings.ToLower(text), "decline") {
			t.Errorf("result %q, want the server to report a decline", text)
		}
	})

	t.Run("declined after elicitation_timeout", func(t *testing.T) {
		c := capsClient(t, s.URL, elicitCaps, mcpclient.WithElicitationHandler(elicitFunc(
			func(ctx context.Context, _ mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
				select { // never answers
				case <-ctx.Done():
				case <-t.Context().Done():
				}
				return nil, context.Canceled
			})))
		start := time.Now()
		text, _ := callText(t, c, tool, nil)
		if !strings.Contains(strings.ToLower(text), "decline") {
			t.Errorf("result %q, want the server to report a decline", text)
		}
		if d := time.Since(start); d < time.Second {
			t.Errorf("declined after %v, before elicitation_timeout (1s)", d)
		}
	})
}

// TestMCPEndpointAskElicitation: a server's question during the agent's
// run (the ask tool) reaches the MCP client that called ask as an
// elicitation, and its answer reaches the server.
func TestMCPEndpointAskElicitation(t *testing.T) {
	llm := newFakeLLM(t,
		call("mcp_everything", map[string]any{"action": "execute", "tool_name": "trigger-elicitation-request", "tool_inputs": map[string]any{}}),
		answer("thanks"))
	s := everythingService(t, llm)
	var mu sync.Mutex
	var asked []mcp.ElicitationParams
	c := capsClient(t, s.URL, mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}, mcpclient.WithElicitationHandler(elicitFunc(
		func(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
			mu.Lock()
			asked = append(asked, req.Params)
			mu.Unlock()
			return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
				Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"name": "Ada Lovelace"}}}, nil
		})))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "ask", map[string]any{"question": "ask me"}
	res, err := c.CallTool(ctx, req)
	if err != nil || res.IsError {
		t.Fatalf("ask: %v %s", err, jsonOf(res))
	}
	for _, want := range []string{"Ada Lovelace", "It was a dark and stormy night."} {
		if !strings.Contains(jsonOf(res.StructuredContent), want) {
			t.Errorf("ask's result objects lack %q (the client's answer): %s", want, jsonOf(res.StructuredContent))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || !strings.HasPrefix(asked[0].Message, "everything asks: ") {
		t.Errorf("the client was asked %+v, want the server's one question", asked)
	}
}

// sampleFunc adapts a func to mcp-go's client.SamplingHandler.
type sampleFunc func(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)

func (f sampleFunc) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return f(ctx, req)
}

// TestMCPEndpointSampling: a server's sampling request during a call
// through /mcp goes to the MCP client that made the call when it declared
// sampling, even with "sampling" off for the server; a client that did
// not declare it leaves the request to the service, which, with the
// server's "sampling" off, refuses it saying so.
func TestMCPEndpointSampling(t *testing.T) {
	cfg := `{"expose": {"mode": "tools"}, "servers": {` + everythingServer(t, "") + `}}`
	s := startService(t, serveOptions{Config: cfg})
	const tool = "everything__trigger-sampling-request"
	args := map[string]any{"prompt": "write a haiku", "maxTokens": 50}

	t.Run("written by the client", func(t *testing.T) {
		var mu sync.Mutex
		var got []string
		c := capsClient(t, s.URL, mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}}, mcpclient.WithSamplingHandler(sampleFunc(
			func(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				mu.Lock()
				defer mu.Unlock()
				for _, m := range req.Messages {
					if tc, ok := m.Content.(mcp.TextContent); ok {
						got = append(got, tc.Text)
					}
				}
				return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant,
					Content: mcp.NewTextContent("the client's haiku")}, Model: "client-model", StopReason: "endTurn"}, nil
			})))
		text, isErr := callText(t, c, tool, args)
		if isErr || !strings.Contains(text, "the client's haiku") {
			t.Fatalf("%s = %q (isError %v), want the client's message", tool, text, isErr)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 1 || !strings.Contains(got[0], "write a haiku") {
			t.Errorf("the client was asked %q, want the server's prompt", got)
		}
	})

	t.Run("refused without the capability", func(t *testing.T) {
		c := capsClient(t, s.URL, mcp.ClientCapabilities{})
		text, _ := callText(t, c, tool, args)
		if !strings.Contains(text, `did not declare the sampling capability, and this server's "sampling" is off`) {
			t.Errorf("%s = %q, want the service's refusal", tool, text)
		}
	})
}
