package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// reply is one scripted answer of the fake model: a tool call (Tool and
// its raw JSON Args string, which may be invalid on purpose) or plain
// Content. With Hold set, the answer waits until Hold is closed (or the
// request is cancelled), so a test can keep a run open.
type reply struct {
	Tool    string
	Args    string
	Content string
	Hold    chan struct{}
}

// call returns a reply calling tool with args marshalled to JSON.
func call(tool string, args any) reply {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return reply{Tool: tool, Args: string(b)}
}

// answer returns a reply calling text_response with text.
func answer(text string) reply { return call("text_response", map[string]any{"text": text}) }

// llmMessage is one message of a recorded chat request.
type llmMessage struct {
	Role    string
	Content string
}

// llmFunction is one function offered in a recorded chat request.
type llmFunction struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// llmRequest is one recorded chat completion request.
type llmRequest struct {
	Path      string
	Model     string
	Messages  []llmMessage
	Functions []llmFunction
}

// FunctionNames returns the names of the functions offered, in order.
func (r llmRequest) FunctionNames() []string {
	out := make([]string, len(r.Functions))
	for i, f := range r.Functions {
		out[i] = f.Name
	}
	return out
}

// Context decodes the decision context: the JSON object of the last user
// message (docs/DECISION_PROMPT.md).
func (r llmRequest) Context(tb testing.TB) map[string]any {
	tb.Helper()
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		if m.Role != "user" || !strings.HasPrefix(strings.TrimSpace(m.Content), "{") {
			continue
		}
		var dc map[string]any
		if err := json.Unmarshal([]byte(m.Content), &dc); err != nil {
			tb.Fatalf("decision context is not JSON: %v\n%s", err, m.Content)
		}
		return dc
	}
	tb.Fatalf("request has no decision context: %+v", r.Messages)
	return nil
}

// fakeLLM is an OpenAI-compatible chat completions server that answers each
// request with the next scripted reply and records every request. It is
// safe for concurrent use. When the script runs out it answers with
// text_response "script exhausted" and counts the overrun.
type fakeLLM struct {
	srv  *httptest.Server
	stop chan struct{}

	mu        sync.Mutex
	script    []reply
	requests  []llmRequest
	overruns  int
	waiting   int // requests blocked on a Hold
	cancelled int // held requests whose client went away
}

// newFakeLLM starts a fake model on 127.0.0.1, stopped when t ends (after
// a service started later, since cleanups run last-in first-out).
func newFakeLLM(tb testing.TB, script ...reply) *fakeLLM {
	tb.Helper()
	f := &fakeLLM{stop: make(chan struct{}), script: script}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	f.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(f.serve)}}
	f.srv.Start()
	tb.Cleanup(func() {
		close(f.stop)
		f.srv.Close()
	})
	return f
}

// Env is the environment that points the service's openai provider at f.
func (f *fakeLLM) Env() []string {
	return []string{"ELYSIA_LLM=openai", "OPENAI_BASE_URL=" + f.srv.URL + "/v1", "OPENAI_API_KEY=test", "ELYSIA_MODEL=scripted"}
}

// Push appends replies to the script.
func (f *fakeLLM) Push(rs ...reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script = append(f.script, rs...)
}

// Requests returns a copy of the requests recorded so far.
func (f *fakeLLM) Requests() []llmRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]llmRequest(nil), f.requests...)
}

// Remaining returns how many scripted replies are still unused.
func (f *fakeLLM) Remaining() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.script)
}

// Overruns returns how many requests found the script empty.
func (f *fakeLLM) Overruns() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.overruns
}

// Waiting returns how many requests are blocked on a Hold.
func (f *fakeLLM) Waiting() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.waiting
}

// Cancelled returns how many held requests were cancelled by the client.
func (f *fakeLLM) Cancelled() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cancelled
}

func (f *fakeLLM) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, `{"error": {"message": "not found"}}`, http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	req, err := decodeChatRequest(r.URL.Path, body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprintf(w, `{"error": {"message": %q}}`, err.Error()) // the client sees a cut body if this fails
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	rep := reply{Tool: "text_response", Args: `{"text": "script exhausted"}`}
	if len(f.script) > 0 {
		rep, f.script = f.script[0], f.script[1:]
	} else {
		f.overruns++
	}
	if rep.Hold != nil {
		f.waiting++
	}
	f.mu.Unlock()
	if rep.Hold != nil {
		select {
		case <-rep.Hold:
		case <-r.Context().Done():
		case <-f.stop:
		}
		f.mu.Lock()
		f.waiting--
		if r.Context().Err() != nil {
			f.cancelled++
		}
		f.mu.Unlock()
		if r.Context().Err() != nil {
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(chatResponse(req.Model, rep))
}

// decodeChatRequest reads the parts of an OpenAI chat request the tests
// look at. A message's content is a string or a list of text parts.
func decodeChatRequest(path string, body []byte) (llmRequest, error) {
	var raw struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return llmRequest{}, fmt.Errorf("bad chat request: %w", err)
	}
	req := llmRequest{Path: path, Model: raw.Model}
	for _, m := range raw.Messages {
		var text string
		if err := json.Unmarshal(m.Content, &text); err != nil {
			var parts []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if err := json.Unmarshal(m.Content, &parts); err != nil && len(m.Content) > 0 && string(m.Content) != "null" {
				return llmRequest{}, fmt.Errorf("message content: %w", err)
			}
			for _, p := range parts {
				text += p.Text
			}
		}
		req.Messages = append(req.Messages, llmMessage{Role: m.Role, Content: text})
	}
	for _, tl := range raw.Tools {
		req.Functions = append(req.Functions, llmFunction{Name: tl.Function.Name,
			Description: tl.Function.Description, Parameters: tl.Function.Parameters})
	}
	return req, nil
}

// chatResponse is the body langchaingo's openai client parses
// (openaiclient.ChatCompletionResponse): choices[].message with content and
// tool_calls[].function.{name, arguments}, arguments being a JSON string.
func chatResponse(model string, rep reply) map[string]any {
	msg := map[string]any{"role": "assistant", "content": rep.Content}
	finish := "stop"
	if rep.Tool != "" {
		msg["tool_calls"] = []map[string]any{{
			"id":       fmt.Sprintf("call_%d", time.Now().UnixNano()),
			"type":     "function",
			"function": map[string]any{"name": rep.Tool, "arguments": rep.Args},
		}}
		finish = "tool_calls"
	}
	return map[string]any{
		"id": "chatcmpl-scripted", "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []map[string]any{{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
	}
}
