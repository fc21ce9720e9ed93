package mcpendpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// keyedUpstream speaks only 2026-07-28; its tools ask under keys of their
// own: "greet" a name (user_name), "where" the client's roots
// (client_roots), "all" the three kinds at once.
func keyedUpstream(t *testing.T) string {
	t.Helper()
	s := mcpserver.NewMCPServer("keyed", "1")
	form := map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}
	name := mcp.ElicitationParams{Message: "What is your name?", RequestedSchema: form}
	verse := mcp.CreateMessageParams{MaxTokens: 20, Messages: []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("a verse")}}}
	s.AddTool(mcp.NewTool("greet"), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r := mcpserver.ElicitationResponse(req.Params.InputResponses, "user_name"); r != nil {
			content, _ := r.Content.(map[string]any)
			return mcp.NewToolResultText(fmt.Sprintf("Hello, %v!", content["name"])), nil
		}
		return mcpserver.NewInputRequestBuilder("").Elicit("user_name", name).ToolResult(), nil
	})
	s.AddTool(mcp.NewTool("where"), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r := mcpserver.RootsResponse(req.Params.InputResponses, "client_roots"); r != nil {
			var uris []string
			for _, root := range r.Roots {
				uris = append(uris, root.URI)
			}
			return mcp.NewToolResultText("roots: " + strings.Join(uris, " ")), nil
		}
		return mcpserver.NewInputRequestBuilder("").Roots("client_roots").ToolResult(), nil
	})
	s.AddTool(mcp.NewTool("all"), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		rs := req.Params.InputResponses
		if mcpserver.ElicitationResponse(rs, "who") != nil && mcpserver.SamplingResponse(rs, "poem") != nil && mcpserver.RootsResponse(rs, "dirs") != nil {
			return mcp.NewToolResultText("all answered"), nil
		}
		return mcpserver.NewInputRequestBuilder("").Elicit("who", name).Sample("poem", verse).Roots("dirs").ToolResult(), nil
	})
	s.AddPrompt(mcp.NewPrompt("brief", mcp.WithArgument("topic")), func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		if r := mcpserver.ElicitationResponse(req.Params.InputResponses, "audience"); r != nil {
			content, _ := r.Content.(map[string]any)
			return mcp.NewGetPromptResult("", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser,
				mcp.NewTextContent(fmt.Sprintf("Brief %v on %s", content["name"], req.Params.Arguments["topic"])))}), nil
		}
		return mcpserver.NewInputRequestBuilder("").Elicit("audience", mcp.ElicitationParams{Message: "Who is it for?", RequestedSchema: form}).PromptResult(), nil
	})
	h := mcpserver.NewStreamableHTTPServer(s, mcpserver.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20260728),
		mcpserver.WithDisableLocalhostProtection(true))
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// capsCall posts a 2026-07-28 tools/call of tool from a client that
// declared elicitation, sampling and roots, with extra params fields
// (inputResponses, requestState) given as JSON text, and returns its
// result.
func capsCall(t *testing.T, base, tool, extra string) map[string]any {
	t.Helper()
	if extra != "" {
		extra = "," + extra
	}
	status, b := modernRequest(t, base, "tools/call", tool, `"name":"`+tool+`","arguments":{}`+extra,
		`{"elicitation":{},"sampling":{},"roots":{}}`, nil)
	var m struct {
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Result == nil {
		t.Fatalf("tools/call %s: %d %s, want a result", tool, status, b)
	}
	return m.Result
}

// asked returns the keys and methods of an input_required result.
func asked(t *testing.T, res map[string]any) (map[string]string, string) {
	t.Helper()
	if res["resultType"] != "input_required" {
		t.Fatalf("result %v, want input_required", res)
	}
	reqs, _ := res["inputRequests"].(map[string]any)
	out := map[string]string{}
	for k, v := range reqs {
		r, _ := v.(map[string]any)
		out[k], _ = r["method"].(string)
	}
	state, _ := res["requestState"].(string)
	return out, state
}

// TestServerKeysReachTheClient: the questions of a 2026-07-28 server reach
// a 2026-07-28 client under the server's own keys, a round's questions in
// one input_required result (a roots/list among them: mcp.json gives the
// server no roots, so the client's are asked for), and an answer the
// client sends with its first request, before anything was asked, answers
// the question of that key without a round (SEP-2322).
func TestServerKeysReachTheClient(t *testing.T) {
	src := &source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{gateway(t, "k", keyedUpstream(t))}}
	base := serve(t, New(src, nil))

	keys, state := asked(t, capsCall(t, base, "k__greet", ""))
	if len(keys) != 1 || keys["user_name"] != "elicitation/create" {
		t.Fatalf("greet asked %v, want user_name (elicitation/create)", keys)
	}
	res := capsCall(t, base, "k__greet", `"inputResponses":{"user_name":{"action":"accept","content":{"name":"Ada"}}},"requestState":"`+state+`"`)
	if text := resultText(res); text != "Hello, Ada!" {
		t.Errorf("greet after the answer = %v", res)
	}

	res = capsCall(t, base, "k__greet", `"inputResponses":{"user_name":{"action":"accept","content":{"name":"Eve"}},"stray":{"action":"accept","content":{}}}`)
	if text := resultText(res); text != "Hello, Eve!" {
		t.Errorf("greet answered up front = %v, want a complete result", res)
	}

	keys, state = asked(t, capsCall(t, base, "k__where", ""))
	if keys["client_roots"] != "roots/list" {
		t.Fatalf("where asked %v, want client_roots (roots/list)", keys)
	}
	res = capsCall(t, base, "k__where", `"inputResponses":{"client_roots":{"roots":[{"uri":"file:///work","name":"work"}]}},"requestState":"`+state+`"`)
	if text := resultText(res); text != "roots: file:///work" {
		t.Errorf("where after the answer = %v", res)
	}

	keys, state = asked(t, capsCall(t, base, "k__all", ""))
	got := slices.Sorted(func(yield func(string) bool) {
		for k, m := range keys {
			if !yield(k + "=" + m) {
				return
			}
		}
	})
	if want := []string{"dirs=roots/list", "poem=sampling/createMessage", "who=elicitation/create"}; !slices.Equal(got, want) {
		t.Fatalf("all asked %v in its first round, want %v", got, want)
	}
	res = capsCall(t, base, "k__all", `"inputResponses":{"who":{"action":"accept","content":{"name":"Ada"}},`+
		`"poem":{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m","stopReason":"endTurn"},`+
		`"dirs":{"roots":[]}},"requestState":"`+state+`"`)
	if text := resultText(res); text != "all answered" {
		t.Errorf("all after the answers = %v", res)
	}
}

// resultText is the text of a tool result as JSON decoded it.
func resultText(res map[string]any) string {
	content, _ := res["content"].([]any)
	var b strings.Builder
	for _, c := range content {
		if m, ok := c.(map[string]any); ok {
			s, _ := m["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

// postModern posts one 2026-07-28 request of method with params (JSON
// text) from a client that declared elicitation, and returns the decoded
// answer.
func postModern(t *testing.T, base, method, name, params string) map[string]any {
	t.Helper()
	_, b := modernRequest(t, base, method, name, params, `{"elicitation":{}}`, nil)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %q: %v", method, b, err)
	}
	return m
}

// TestPromptQuestionsReachTheClient: a 2026-07-28 server's question while
// it renders a prompt reaches a 2026-07-28 client as an input_required
// result of its prompts/get, under the server's key; the retry with the
// answer and the requestState gets the prompt, and a requestState cannot
// be used for the same prompt with other arguments. A 2025-11-25 client
// is asked on its session, as during a tool call.
func TestPromptQuestionsReachTheClient(t *testing.T) {
	src := &source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{gateway(t, "k", keyedUpstream(t))}}
	base := serve(t, New(src, nil))

	m := postModern(t, base, "prompts/get", "k__brief", `"name":"k__brief","arguments":{"topic":"tides"}`)
	res, _ := m["result"].(map[string]any)
	keys, state := asked(t, res)
	if keys["audience"] != "elicitation/create" {
		t.Fatalf("prompts/get asked %v, want audience (elicitation/create)", keys)
	}
	answer := `"inputResponses":{"audience":{"action":"accept","content":{"name":"sailors"}}},"requestState":"` + state + `"`
	m = postModern(t, base, "prompts/get", "k__brief", `"name":"k__brief","arguments":{"topic":"winds"},`+answer)
	if _, msg := errorOf(m); !strings.Contains(msg, "another request") {
		t.Errorf("the requestState with other arguments: %v, want it refused", m)
	}
	m = postModern(t, base, "prompts/get", "k__brief", `"name":"k__brief","arguments":{"topic":"tides"},`+answer)
	res, _ = m["result"].(map[string]any)
	if b, _ := json.Marshal(res["messages"]); !strings.Contains(string(b), "Brief sailors on tides") {
		t.Fatalf("prompts/get after the answer: %v", m)
	}

	tr, err := mcptransport.NewStreamableHTTP(base + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	old := mcpclient.NewClient(tr, mcpclient.WithProtocolVersion(mcp.ProtocolVersion20251125),
		mcpclient.WithElicitationHandler(elicitHandler(func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
			return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept,
				Content: map[string]any{"name": "pilots"}}}, nil
		})))
	if err := old.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = old.Close() })
	if _, err := old.Initialize(t.Context(), mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	req := mcp.GetPromptRequest{}
	req.Params.Name, req.Params.Arguments = "k__brief", map[string]string{"topic": "tides"}
	got, err := old.GetPrompt(t.Context(), req)
	if err != nil || len(got.Messages) != 1 {
		t.Fatalf("2025-11-25 prompts/get: %v %+v", err, got)
	}
	if tc, _ := got.Messages[0].Content.(mcp.TextContent); tc.Text != "Brief pilots on tides" {
		t.Errorf("2025-11-25 prompts/get = %+v", got.Messages[0].Content)
	}
}
