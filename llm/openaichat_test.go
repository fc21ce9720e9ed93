package llm

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/elysia-go/elysia/tools"
)

// recordingChat is an OpenAI-compatible chat server that keeps every
// request's body and headers and answers with answer (status 200 unless
// status is set).
type recordingChat struct {
	answer string
	status int

	mu      sync.Mutex
	bodies  []map[string]any
	headers []http.Header
}

func (s *recordingChat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	var body map[string]any
	if err == nil {
		err = json.Unmarshal(raw, &body)
	}
	if err != nil || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	h := r.Header.Clone()
	h.Del("Content-Length")
	h.Del("Accept-Encoding")
	h.Del("User-Agent")
	s.headers = append(s.headers, h)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if s.status != 0 {
		w.WriteHeader(s.status)
	}
	_, _ = io.WriteString(w, s.answer)
}

// last returns the body and headers of the last request.
func (s *recordingChat) last(t *testing.T) (map[string]any, http.Header) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.bodies) == 0 {
		t.Fatal("the server got no request")
	}
	return s.bodies[len(s.bodies)-1], s.headers[len(s.headers)-1]
}

const toolCallAnswer = `{"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
	"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": "Listing <the> tools.",
		"reasoning_content": "thought",
		"tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "mcp_demo", "arguments": "{\"action\": \"list\"}"}},
			{"id": "call_2", "type": "function", "function": {"name": "text_response", "arguments": "{}"}}]}},
		{"index": 1, "finish_reason": "function_call", "message": {"role": "assistant", "content": null,
			"function_call": {"name": "old", "arguments": "{\"a\": 1}"}}},
		{"index": 2, "finish_reason": null, "message": {"role": "assistant", "content": "plain"}}],
	"usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18,
		"prompt_tokens_details": {"cached_tokens": 3, "audio_tokens": 1},
		"completion_tokens_details": {"reasoning_tokens": 2, "audio_tokens": 4, "accepted_prediction_tokens": 5, "rejected_prediction_tokens": 6}}}`

// TestOpenAIChatSendsWhatLangchaingoSends: for each call, the model
// FromEnv returns sends the request langchaingo's client sends (the same
// JSON and headers) and reads the answer into the same response; the
// calls a decision makes are written by appendChatRequest, the others
// fall back to langchaingo.
func TestOpenAIChatSendsWhatLangchaingoSends(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"action": map[string]any{"type": "string", "enum": []any{"list", "execute"}, "description": "what to do <now> & \u2028 then"}},
		"required": []any{"action"}}
	decision := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "Choose exactly one of the available options.\n\t\"quoted\" \\ <b>&amp;</b>"),
		llms.TextParts(llms.ChatMessageTypeHuman, "{\"user_prompt\": \"what can the demo server do? \x01 \xff caf\u00e9 \U0001F600\"}"),
		llms.TextParts(llms.ChatMessageTypeAI, "mcp_demo {}"),
		llms.TextParts(llms.ChatMessageTypeGeneric, "Your answer could not be used."),
	}
	fns := []llms.Tool{
		{Type: "function", Function: &llms.FunctionDefinition{Name: "mcp_demo", Description: "The demo server.", Parameters: schema}},
		{Type: "function", Function: &llms.FunctionDefinition{Name: "text_response", Parameters: map[string]any{"type": "object"}, Strict: true}},
	}
	// The same functions with their schemas sealed, as the tree's are.
	sealed := []llms.Tool{
		{Type: "function", Function: &llms.FunctionDefinition{Name: "mcp_demo", Description: "The demo server.",
			Parameters: tools.Seal(map[string]any{"type": "object", "properties": map[string]any{
				"action": map[string]any{"type": "string", "enum": []any{"list", "execute"}, "description": "what to do <now>"}}})}},
		{Type: "function", Function: &llms.FunctionDefinition{Name: "text_response", Parameters: tools.Seal(map[string]any{"type": "object"})}},
	}
	tests := []struct {
		name  string
		model string // ELYSIA_MODEL
		msgs  []llms.MessageContent
		opts  []llms.CallOption
		fast  bool // written by appendChatRequest
	}{
		{"decision", "gpt-4o-mini", decision, []llms.CallOption{llms.WithTools(fns)}, true},
		{"sealed schemas", "scripted", decision, []llms.CallOption{llms.WithTools(sealed)}, true},
		{"no tools", "scripted", decision[:2], nil, true},
		{"every option", "scripted", decision, []llms.CallOption{llms.WithTools(fns), llms.WithTemperature(0.25), llms.WithMaxTokens(300),
			llms.WithN(2), llms.WithStopWords([]string{"STOP", "<end>"}), llms.WithFrequencyPenalty(0.5), llms.WithPresencePenalty(-0.5),
			llms.WithSeed(42), llms.WithModel("other-model")}, true},
		{"reasoning model", "o3-mini", decision, []llms.CallOption{llms.WithTools(fns)}, false},
		{"o1", "O1", decision, []llms.CallOption{llms.WithTools(fns)}, false},
		{"json mode", "scripted", decision, []llms.CallOption{llms.WithJSONMode()}, false},
		{"tool choice", "scripted", decision, []llms.CallOption{llms.WithTools(fns), llms.WithToolChoice("required")}, false},
		{"two parts", "scripted", []llms.MessageContent{{Role: llms.ChatMessageTypeHuman,
			Parts: []llms.ContentPart{llms.TextContent{Text: "a"}, llms.TextContent{Text: "b"}}}}, nil, false},
		{"tool call part", "scripted", []llms.MessageContent{decision[1], {Role: llms.ChatMessageTypeAI,
			Parts: []llms.ContentPart{llms.ToolCall{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "f", Arguments: "{}"}}}},
			{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "c1", Name: "f", Content: "ok"}}}}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &recordingChat{answer: toolCallAnswer}
			hs := httptest.NewServer(srv)
			t.Cleanup(hs.Close)
			model, _, err := FromEnv(t.Context(), fakeLookup(map[string]string{
				EnvOpenAIKey: "test-key", EnvOpenAIBaseURL: hs.URL + "/v1/", EnvModel: tt.model, EnvOpenAIOrg: "org-1"}),
				&Options{HTTPClient: hs.Client()})
			if err != nil {
				t.Fatal(err)
			}
			chat, ok := model.(*openAIChat)
			if !ok {
				t.Fatalf("FromEnv's OpenAI model is a %T", model)
			}
			got, err := model.GenerateContent(t.Context(), tt.msgs, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			gotBody, gotHeader := srv.last(t)

			// langchaingo's own client, as newOpenAI configures it.
			want, err := chat.LLM.GenerateContent(t.Context(), tt.msgs, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			wantBody, wantHeader := srv.last(t)
			if diff := cmp.Diff(wantBody, gotBody); diff != "" {
				t.Errorf("request body (-langchaingo +ours):\n%s", diff)
			}
			if diff := cmp.Diff(wantHeader, gotHeader); diff != "" {
				t.Errorf("request headers (-langchaingo +ours):\n%s", diff)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("response (-langchaingo +ours):\n%s", diff)
			}

			var opts llms.CallOptions
			for _, o := range tt.opts {
				o(&opts)
			}
			m := opts.Model
			if m == "" {
				m = tt.model
			}
			if _, fast, err := appendChatRequest(nil, m, tt.msgs, &opts); err != nil || fast != tt.fast {
				t.Errorf("appendChatRequest: written here = %v (%v), want %v", fast, err, tt.fast)
			}
		})
	}
}

// TestOpenAIChatErrors: a failed call reads as langchaingo's would.
func TestOpenAIChatErrors(t *testing.T) {
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hello")}
	for _, tt := range []struct {
		name   string
		status int
		answer string
		want   string
	}{
		{"error object", http.StatusTooManyRequests, `{"error": {"message": "slow down", "type": "rate_limit"}}`,
			"API returned unexpected status code: 429: slow down"},
		{"no JSON", http.StatusBadGateway, `<html>bad gateway</html>`, "API returned unexpected status code: 502"},
		{"no choices", 0, `{"choices": []}`, openai.ErrEmptyResponse.Error()},
		{"bad JSON", 0, `{"choices": [`, "unexpected end of JSON input"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hs := httptest.NewServer(&recordingChat{answer: tt.answer, status: tt.status})
			t.Cleanup(hs.Close)
			model, _, err := FromEnv(t.Context(), fakeLookup(map[string]string{
				EnvOpenAIKey: "test-key", EnvOpenAIBaseURL: hs.URL + "/v1", EnvModel: "scripted"}), &Options{HTTPClient: hs.Client()})
			if err != nil {
				t.Fatal(err)
			}
			_, err = model.GenerateContent(t.Context(), msgs)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("GenerateContent: %v; want an error saying %q", err, tt.want)
			}
		})
	}

	// A cancelled call says so, without the URL.
	hs := httptest.NewServer(&recordingChat{answer: toolCallAnswer})
	t.Cleanup(hs.Close)
	model, _, err := FromEnv(t.Context(), fakeLookup(map[string]string{
		EnvOpenAIKey: "test-key", EnvOpenAIBaseURL: hs.URL + "/v1", EnvModel: "scripted"}), &Options{HTTPClient: hs.Client()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := model.GenerateContent(ctx, msgs); err == nil || err.Error() != "request cancelled" {
		t.Errorf("GenerateContent with a cancelled ctx: %v; want request cancelled", err)
	}
}
