package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tmc/langchaingo/llms"
)

func fakeLookup(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
}

func TestFromEnv(t *testing.T) {
	const secret = "sk-secret-value"
	tests := []struct {
		name    string
		env     map[string]string
		want    Info
		wantErr error
		errHas  string
	}{
		{"nothing set is offline", nil, Info{Provider: ProviderOffline, Model: "offline-planner"}, nil, ""},
		{"empty key counts as unset", map[string]string{EnvOpenAIKey: ""},
			Info{Provider: ProviderOffline, Model: "offline-planner"}, nil, ""},
		{"openai key", map[string]string{EnvOpenAIKey: secret},
			Info{Provider: ProviderOpenAI, Model: "gpt-4o-mini", BaseURL: "https://api.openai.com/v1"}, nil, ""},
		{"openai before anthropic", map[string]string{EnvOpenAIKey: secret, EnvAnthropicKey: secret},
			Info{Provider: ProviderOpenAI, Model: "gpt-4o-mini", BaseURL: "https://api.openai.com/v1"}, nil, ""},
		{"anthropic key", map[string]string{EnvAnthropicKey: secret, EnvGoogleKey: secret},
			Info{Provider: ProviderAnthropic, Model: "claude-sonnet-4-5"}, nil, ""},
		{"ollama host before google", map[string]string{EnvOllamaHost: "10.0.0.5", EnvGoogleKey: secret},
			Info{Provider: ProviderOllama, Model: "llama3.1", BaseURL: "http://10.0.0.5:11434"}, nil, ""},
		{"ollama host url kept", map[string]string{EnvOllamaHost: "https://ollama.example:8443"},
			Info{Provider: ProviderOllama, Model: "llama3.1", BaseURL: "https://ollama.example:8443"}, nil, ""},
		{"ollama default host", map[string]string{EnvProvider: "ollama"},
			Info{Provider: ProviderOllama, Model: "llama3.1", BaseURL: "http://127.0.0.1:11434"}, nil, ""},
		{"google key", map[string]string{EnvGoogleKey: secret},
			Info{Provider: ProviderGoogleAI, Model: "gemini-2.0-flash"}, nil, ""},
		{"model override", map[string]string{EnvOpenAIKey: secret, EnvModel: "gpt-4.1"},
			Info{Provider: ProviderOpenAI, Model: "gpt-4.1", BaseURL: "https://api.openai.com/v1"}, nil, ""},
		{"explicit provider wins over keys", map[string]string{EnvProvider: "Anthropic", EnvOpenAIKey: secret, EnvAnthropicKey: secret},
			Info{Provider: ProviderAnthropic, Model: "claude-sonnet-4-5"}, nil, ""},
		{"explicit offline", map[string]string{EnvProvider: "offline", EnvOpenAIKey: secret, EnvModel: "gpt-4.1"},
			Info{Provider: ProviderOffline, Model: "offline-planner"}, nil, ""},
		{"compatible server needs no key", map[string]string{EnvProvider: "openai", EnvOpenAIBaseURL: "http://user:pw@127.0.0.1:8080/v1?k=v", EnvModel: "qwen"},
			Info{Provider: ProviderOpenAI, Model: "qwen", BaseURL: "http://127.0.0.1:8080/v1"}, nil, ""},
		{"openai without key", map[string]string{EnvProvider: "openai"}, Info{}, ErrMissingKey, EnvOpenAIKey},
		{"anthropic without key", map[string]string{EnvProvider: "anthropic", EnvOpenAIKey: secret}, Info{}, ErrMissingKey, EnvAnthropicKey},
		{"googleai without key", map[string]string{EnvProvider: "googleai"}, Info{}, ErrMissingKey, EnvGoogleKey},
		{"unknown provider", map[string]string{EnvProvider: "gpt"}, Info{}, ErrUnknownProvider, EnvProvider},
		{"bad base url", map[string]string{EnvOpenAIKey: secret, EnvOpenAIBaseURL: "::nope"}, Info{}, nil, EnvOpenAIBaseURL},
		{"bad ollama host", map[string]string{EnvOllamaHost: "http://"}, Info{}, nil, EnvOllamaHost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model, info, err := FromEnv(t.Context(), fakeLookup(tt.env), nil)
			if tt.errHas != "" {
				if err == nil {
					t.Fatalf("FromEnv = %v, want an error", info)
				}
				if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Errorf("err = %v, want %v", err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.errHas) || strings.Contains(err.Error(), secret) {
					t.Errorf("err = %q, want it to name %s and hold no secret", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if model == nil {
				t.Fatal("nil model")
			}
			if diff := cmp.Diff(tt.want, info); diff != "" {
				t.Errorf("info mismatch (-want +got):\n%s", diff)
			}
			b, _ := json.Marshal(info)
			if s := info.String() + string(b) + fmt.Sprintf("%+v", info); strings.Contains(s, secret) || strings.Contains(s, "pw") {
				t.Errorf("info shows a secret: %s", s)
			}
		})
	}
}

// chatServer is an OpenAI-compatible chat completions endpoint that answers
// every request with one tool call, and keeps the last request.
type chatServer struct {
	mu   sync.Mutex // mu guards auth and body
	auth string
	body map[string]any
}

func (s *chatServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	s.mu.Lock()
	s.auth, s.body = r.Header.Get("Authorization"), body
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "test-model",
		"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant",
			"content": "Listing the tools.",
			"tool_calls": [{"id": "call_1", "type": "function",
				"function": {"name": "mcp_demo", "arguments": "{\"action\": \"list\"}"}}]}}],
		"usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}`)
}

// TestOpenAICompatibleToolCall proves the path the tree uses: a model from
// FromEnv, pointed at an OpenAI-compatible server, surfaces the server's
// tool call as ToolCalls.
func TestOpenAICompatibleToolCall(t *testing.T) {
	fake := &chatServer{}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	model, info, err := FromEnv(t.Context(), fakeLookup(map[string]string{
		EnvOpenAIKey: "test-key", EnvOpenAIBaseURL: srv.URL + "/v1", EnvModel: "test-model"}),
		&Options{HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if info.Provider != ProviderOpenAI || info.BaseURL != srv.URL+"/v1" {
		t.Errorf("info = %+v", info)
	}
	resp, err := model.GenerateContent(t.Context(), []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "Choose exactly one of the available options."),
		llms.TextParts(llms.ChatMessageTypeHuman, `{"user_prompt": "what can the demo server do?"}`),
	}, llms.WithTools([]llms.Tool{gatewayTool("mcp_demo"), answerFn}))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 1 || len(resp.Choices[0].ToolCalls) != 1 {
		t.Fatalf("choices = %+v", resp.Choices)
	}
	c := resp.Choices[0]
	fc := c.ToolCalls[0].FunctionCall
	if fc.Name != "mcp_demo" || fc.Arguments != `{"action": "list"}` || c.Content != "Listing the tools." {
		t.Errorf("choice = %+v, call = %+v", c, fc)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if fake.auth != "Bearer test-key" {
		t.Errorf("Authorization = %q", fake.auth)
	}
	if fake.body["model"] != "test-model" {
		t.Errorf("model = %v", fake.body["model"])
	}
	tools, _ := fake.body["tools"].([]any)
	if len(tools) != 2 {
		t.Errorf("request offered %d tools, want 2: %v", len(tools), fake.body["tools"])
	}
}

// TestAnthropicToolCallInOneChoice checks that a reply with a text block
// before its tool_use block reaches the tree as one choice: the tree reads
// only the first.
func TestAnthropicToolCallInOneChoice(t *testing.T) {
	var (
		mu  sync.Mutex
		key string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/messages" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		key = r.Header.Get("x-api-key")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id": "msg_1", "type": "message", "role": "assistant", "model": "test-model",
			"content": [{"type": "text", "text": "Listing the tools."},
				{"type": "tool_use", "id": "toolu_1", "name": "mcp_demo", "input": {"action": "list"}}],
			"stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}}`)
	}))
	t.Cleanup(srv.Close)
	model, info, err := FromEnv(t.Context(), fakeLookup(map[string]string{
		EnvAnthropicKey: "test-key", EnvAnthropicURL: srv.URL + "/v1", EnvModel: "test-model"}),
		&Options{HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if info.Provider != ProviderAnthropic {
		t.Errorf("info = %+v", info)
	}
	resp, err := model.GenerateContent(t.Context(), []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "Choose exactly one of the available options."),
		llms.TextParts(llms.ChatMessageTypeHuman, `{"user_prompt": "what can the demo server do?"}`),
	}, llms.WithTools([]llms.Tool{gatewayTool("mcp_demo"), answerFn}))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 1 || len(resp.Choices[0].ToolCalls) != 1 {
		t.Fatalf("choices = %+v", resp.Choices)
	}
	c := resp.Choices[0]
	if fc := c.ToolCalls[0].FunctionCall; fc.Name != "mcp_demo" || fc.Arguments != `{"action":"list"}` || c.Content != "Listing the tools." {
		t.Errorf("choice = %+v, call = %+v", c, fc)
	}
	mu.Lock()
	defer mu.Unlock()
	if key != "test-key" {
		t.Errorf("x-api-key = %q", key)
	}
}

// TestFromEnvPoolsConnections sends concurrent requests through a model
// from FromEnv with no client given: the default client keeps enough idle
// connections that later rounds reuse them instead of dialling again.
//
// A connection goes back to the pool on the transport's read goroutine just
// after the caller saw the end of the body, so a request of the next round
// can miss one that is on its way back and dial: the bound allows for that
// (at most one extra connection per request of the first round). Go's
// default client, which keeps 2 idle connections per host, dials
// parallel + (rounds-1)*(parallel-2) = 32 times here.
func TestFromEnvPoolsConnections(t *testing.T) {
	var mu sync.Mutex // guards dials
	dials := 0
	srv := httptest.NewUnstartedServer(&chatServer{})
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			dials++
			mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	const parallel = 8
	model, _, err := FromEnv(t.Context(), fakeLookup(map[string]string{
		EnvOpenAIKey: "test-key", EnvOpenAIBaseURL: srv.URL + "/v1", EnvModel: "test-model"}), &Options{MaxConns: parallel})
	if err != nil {
		t.Fatal(err)
	}
	const rounds = 5
	for range rounds {
		var wg sync.WaitGroup
		for range parallel {
			wg.Go(func() {
				if _, err := model.GenerateContent(t.Context(), []llms.MessageContent{
					llms.TextParts(llms.ChatMessageTypeHuman, "hi")}, llms.WithTools([]llms.Tool{answerFn})); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	mu.Lock()
	defer mu.Unlock()
	if dials > 2*parallel {
		t.Errorf("%d connections for %d rounds of %d concurrent requests, want at most %d", dials, rounds, parallel, 2*parallel)
	}
}

func TestNewHTTPClient(t *testing.T) {
	tr := NewHTTPClient(&Options{MaxConns: 50}).Transport.(*http.Transport)
	if tr.MaxIdleConnsPerHost != 50 || !tr.ForceAttemptHTTP2 || tr.TLSHandshakeTimeout == 0 ||
		tr.ResponseHeaderTimeout != defaultResponseHeaderTimeout || tr.WriteBufferSize != writeBufferSize {
		t.Errorf("transport = %+v", tr)
	}
	if def := NewHTTPClient(nil).Transport.(*http.Transport); def.MaxIdleConnsPerHost != defaultMaxConns {
		t.Errorf("default pool = %d", def.MaxIdleConnsPerHost)
	}
}

// Only ollama's client drops the functions a call offers; the tree then
// describes the options in the prompt.
func TestSendsFunctions(t *testing.T) {
	for _, p := range []Provider{ProviderOpenAI, ProviderAnthropic, ProviderGoogleAI, ProviderOffline, ProviderOllama} {
		if got, want := (Info{Provider: p}).SendsFunctions(), p != ProviderOllama; got != want {
			t.Errorf("%s: SendsFunctions = %v, want %v", p, got, want)
		}
	}
}
