package main

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// The tools and the prompt of the 2026-07-28 scenarios (suite 0.2): each
// asks its client with an input_required result (multi round-trip
// requests, SEP-2322) and reads the answers from the retry, keeping what
// it needs between rounds in the requestState. mcp-go turns the same
// handlers into server-initiated requests for a client of 2025-11-25, so
// the fixture serves both eras behind the gateway.

// stateKey signs the requestStates of test_input_required_result_tampered_state.
var stateKey = func() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return b
}()

// signState returns state with an HMAC over it.
func signState(state string) string {
	m := hmac.New(sha256.New, stateKey)
	m.Write([]byte(state))
	return base64.RawURLEncoding.EncodeToString([]byte(state)) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// verifyState returns the state signState signed, or false.
func verifyState(signed string) (string, bool) {
	body, sum, ok := strings.Cut(signed, ".")
	if !ok {
		return "", false
	}
	state, err1 := base64.RawURLEncoding.DecodeString(body)
	got, err2 := base64.RawURLEncoding.DecodeString(sum)
	if err1 != nil || err2 != nil {
		return "", false
	}
	m := hmac.New(sha256.New, stateKey)
	m.Write(state)
	return string(state), hmac.Equal(got, m.Sum(nil))
}

// form is an elicitation of one required string field.
func form(message, field string) mcp.ElicitationParams {
	return mcp.ElicitationParams{Message: message, RequestedSchema: map[string]any{
		"type":       "object",
		"properties": map[string]any{field: map[string]any{"type": "string"}},
		"required":   []string{field},
	}}
}

// accepted is the field of an accepted elicitation answer under key, and
// whether there was one.
func accepted(rs mcp.InputResponses, key, field string) (any, bool) {
	r := mcpserver.ElicitationResponse(rs, key)
	if r == nil || r.Action != mcp.ElicitationResponseActionAccept {
		return nil, false
	}
	c, _ := r.Content.(map[string]any)
	return c[field], true
}

// question is a sampling request of one user message.
func question(text string, maxTokens int) mcp.CreateMessageParams {
	return mcp.CreateMessageParams{
		Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent(text)}},
		MaxTokens: maxTokens,
	}
}

// stateOf decodes a requestState the fixture wrote as JSON.
func stateOf(text string) map[string]any {
	var m map[string]any
	_ = json.Unmarshal([]byte(text), &m) // not ours: empty
	return m
}

// jsonState is m as a requestState.
func jsonState(m map[string]any) string {
	b, _ := json.Marshal(m)
	return string(b)
}

// addInputTools registers the tools of the input-required-result
// scenarios and test_missing_capability.
func addInputTools(s *mcpserver.MCPServer) {
	tool := func(name, desc string, h func(rs mcp.InputResponses, state string) *mcp.CallToolResult) {
		s.AddTool(mcp.NewTool(name, mcp.WithDescription(desc)),
			func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return h(req.Params.InputResponses, req.Params.RequestState), nil
			})
	}
	tool("test_input_required_result_elicitation", "Asks the user's name (SEP-2322)", func(rs mcp.InputResponses, _ string) *mcp.CallToolResult {
		if name, ok := accepted(rs, "user_name", "name"); ok {
			return text(fmt.Sprintf("Hello, %v!", name))
		}
		return mcpserver.NewInputRequestBuilder("").Elicit("user_name", form("What is your name?", "name")).ToolResult()
	})
	tool("test_input_required_result_sampling", "Asks the client's model (SEP-2322)", func(rs mcp.InputResponses, _ string) *mcp.CallToolResult {
		if r := mcpserver.SamplingResponse(rs, "capital_question"); r != nil {
			reply := ""
			// The answer's content decodes untyped (a map): parsed, it is
			// the text the client's model wrote.
			if c, err := mcp.ParseSamplingContent(r.Content); err == nil {
				if tc, ok := c.(mcp.TextContent); ok {
					reply = tc.Text
				}
			}
			return text("The model said: " + reply)
		}
		return mcpserver.NewInputRequestBuilder("").Sample("capital_question", question("What is the capital of France?", 100)).ToolResult()
	})
	tool("test_input_required_result_list_roots", "Asks the client's roots (SEP-2322)", func(rs mcp.InputResponses, _ string) *mcp.CallToolResult {
		if r := mcpserver.RootsResponse(rs, "client_roots"); r != nil {
			return text(fmt.Sprintf("Roots: %d", len(r.Roots)))
		}
		return mcpserver.NewInputRequestBuilder("").Roots("client_roots").ToolResult()
	})
	tool("test_input_required_result_request_state", "Keeps a requestState between rounds (SEP-2322)", func(rs mcp.InputResponses, state string) *mcp.CallToolResult {
		if ok, got := accepted(rs, "confirm", "ok"); got && ok == true && stateOf(state)["kind"] == "request-state" {
			return text("state-ok: requestState validated")
		}
		confirm := mcp.ElicitationParams{Message: "Please confirm", RequestedSchema: map[string]any{
			"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}, "required": []string{"ok"},
		}}
		return mcpserver.NewInputRequestBuilder(jsonState(map[string]any{"kind": "request-state", "nonce": rand.Text()})).
			Elicit("confirm", confirm).ToolResult()
	})
	tool("test_input_required_result_multiple_inputs", "Asks three things at once (SEP-2322)", func(rs mcp.InputResponses, state string) *mcp.CallToolResult {
		name, named := accepted(rs, "user_name", "name")
		greeting := mcpserver.SamplingResponse(rs, "greeting")
		roots := mcpserver.RootsResponse(rs, "client_roots")
		if named && greeting != nil && roots != nil && stateOf(state)["kind"] == "multiple-inputs" {
			return text(fmt.Sprintf("Name: %v; Roots: %d", name, len(roots.Roots)))
		}
		return mcpserver.NewInputRequestBuilder(jsonState(map[string]any{"kind": "multiple-inputs", "nonce": rand.Text()})).
			Elicit("user_name", form("What is your name?", "name")).
			Sample("greeting", question("Generate a greeting", 50)).
			Roots("client_roots").ToolResult()
	})
	tool("test_input_required_result_multi_round", "Asks twice, one question a round (SEP-2322)", func(rs mcp.InputResponses, state string) *mcp.CallToolResult {
		st := stateOf(state)
		if st["round"] == 1.0 {
			if name, ok := accepted(rs, "step1", "name"); ok {
				return mcpserver.NewInputRequestBuilder(jsonState(map[string]any{"round": 2, "name": name, "nonce": rand.Text()})).
					Elicit("step2", form("Step 2: What is your favorite color?", "color")).ToolResult()
			}
		}
		if st["round"] == 2.0 {
			if color, ok := accepted(rs, "step2", "color"); ok {
				return text(fmt.Sprintf("Multi-round complete for %v who likes %v", st["name"], color))
			}
		}
		return mcpserver.NewInputRequestBuilder(jsonState(map[string]any{"round": 1, "nonce": rand.Text()})).
			Elicit("step1", form("Step 1: What is your name?", "name")).ToolResult()
	})
	tool("test_input_required_result_tampered_state", "Signs its requestState (SEP-2322)", func(rs mcp.InputResponses, state string) *mcp.CallToolResult {
		if state != "" {
			if _, ok := verifyState(state); !ok {
				return mcp.NewToolResultError("requestState integrity check failed")
			}
			if _, ok := accepted(rs, "confirm", "ok"); ok {
				return text("state verified")
			}
		}
		confirm := mcp.ElicitationParams{Message: "Please confirm", RequestedSchema: map[string]any{
			"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}, "required": []string{"ok"},
		}}
		return mcpserver.NewInputRequestBuilder(signState(rand.Text())).Elicit("confirm", confirm).ToolResult()
	})
	tool("test_input_required_result_capabilities", "Asks what the client can answer (SEP-2322)", func(rs mcp.InputResponses, _ string) *mcp.CallToolResult {
		if _, ok := accepted(rs, "elicit_input", "name"); ok || mcpserver.SamplingResponse(rs, "sample_input") != nil {
			return text("answered")
		}
		// Behind the gateway the fixture sees the gateway's capabilities,
		// not the end client's: it asks both, and the endpoint puts to its
		// client only what that client declared.
		return mcpserver.NewInputRequestBuilder("").
			Elicit("elicit_input", form("What is your name?", "name")).
			Sample("sample_input", question("Say hello", 20)).ToolResult()
	})
	tool("test_missing_capability", "Needs the client's sampling", func(rs mcp.InputResponses, _ string) *mcp.CallToolResult {
		if mcpserver.SamplingResponse(rs, "needs_sampling") != nil {
			return text("Success")
		}
		return mcpserver.NewInputRequestBuilder("").Sample("needs_sampling", question("Say yes", 10)).ToolResult()
	})
	s.AddPrompt(mcp.NewPrompt("test_input_required_result_prompt", mcp.WithPromptDescription("Asks for context before it renders (SEP-2322)")),
		func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			if c, ok := accepted(req.Params.InputResponses, "user_context", "context"); ok {
				return mcp.NewGetPromptResult("with context", []mcp.PromptMessage{
					mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(fmt.Sprintf("Prompt with context: %v", c))),
				}), nil
			}
			return mcpserver.NewInputRequestBuilder("").Elicit("user_context", form("What context should the prompt use?", "context")).PromptResult(), nil
		})
}

// customHeaders is test_custom_headers's input schema: parameters mirrored
// into Mcp-Param-* headers (SEP-2243).
const customHeaders = `{"type": "object", "properties": {
  "region": {"type": "string", "x-mcp-header": "Region"},
  "priority": {"type": "integer", "x-mcp-header": "Priority"},
  "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
  "query": {"type": "string"}
}, "required": ["region"]}`

// addHeaderTools registers test_custom_headers.
func addHeaderTools(s *mcpserver.MCPServer) {
	s.AddTool(mcp.NewToolWithRawSchema("test_custom_headers", "Echoes the parameters its callers mirror into headers (SEP-2243)",
		json.RawMessage(customHeaders)),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			got, _ := json.Marshal(req.GetArguments())
			return text("headers ok: " + string(got)), nil
		})
}
