package llm

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"
)

// TestOpenAIDirectMatchesLangchaingo checks that a decision's call, which
// the openai model sends itself, sends the request langchaingo's client
// sends (the same JSON value and headers) and reads its answer and errors
// the same way.
func TestOpenAIDirectMatchesLangchaingo(t *testing.T) {
	var mu sync.Mutex
	var bodies []map[string]any
	var headers []http.Header
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Errorf("body is not JSON: %v", err)
		}
		mu.Lock()
		bodies = append(bodies, v)
		headers = append(headers, r.Header.Clone())
		st := status
		mu.Unlock()
		if r.URL.Path != "/v1/chat/completions" {
			t.Errorf("path %q", r.URL.Path)
		}
		w.WriteHeader(st)
		if st != http.StatusOK {
			_, _ = io.WriteString(w, `{"error": {"message": "bad <things> & more"}}`)
			return
		}
		_, _ = io.WriteString(w, `{"id":"x","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant",
			"content":"ok","tool_calls":[{"id":"c1","type":"function","function":{"name":"mcp_demo","arguments":"{\"a\":1}"}}]}}],
			"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5,"completion_tokens_details":{"reasoning_tokens":1}}}`)
	}))
	defer srv.Close()
	env := map[string]string{EnvProvider: "openai", EnvOpenAIBaseURL: srv.URL + "/v1/", EnvOpenAIKey: "k", EnvOpenAIOrg: "org"}
	m, _, err := FromEnv(context.Background(), func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
	if err != nil {
		t.Fatal(err)
	}
	oc, ok := m.(*openAIChat)
	if !ok || !oc.direct {
		t.Fatalf("model is %T, direct %v", m, ok && oc.direct)
	}
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "rules <b> & \"quotes\""),
		llms.TextParts(llms.ChatMessageTypeHuman, `{"user_prompt":"hi \u2028 <x>","n":[1,2]}`),
		llms.TextParts(llms.ChatMessageTypeAI, "I call x."),
		llms.TextParts(llms.ChatMessageTypeHuman, "again"),
	}
	fns := llms.WithTools([]llms.Tool{gatewayTool("mcp_demo"), answerFn,
		{Type: "function", Function: &llms.FunctionDefinition{Name: "raw", Parameters: json.RawMessage(`{"type": "object"}`)}}})
	for _, st := range []int{http.StatusOK, http.StatusBadRequest} {
		mu.Lock()
		status, bodies, headers = st, nil, nil
		mu.Unlock()
		direct, derr := oc.GenerateContent(context.Background(), msgs, fns)
		lc, lerr := oc.LLM.GenerateContent(context.Background(), msgs, fns)
		if (derr == nil) != (lerr == nil) || derr != nil && derr.Error() != lerr.Error() {
			t.Fatalf("status %d: errors differ: %v, langchaingo %v", st, derr, lerr)
		}
		if !reflect.DeepEqual(direct, lc) {
			t.Errorf("status %d: responses differ:\n%+v\n%+v", st, direct, lc)
		}
		if len(bodies) != 2 || !reflect.DeepEqual(bodies[0], bodies[1]) {
			t.Fatalf("status %d: bodies differ:\n%v\n%v", st, bodies[0], bodies[1])
		}
		for _, h := range []string{"Content-Type", "Authorization", "Openai-Organization"} {
			if headers[0].Get(h) != headers[1].Get(h) || headers[0].Get(h) == "" {
				t.Errorf("header %s: %q, langchaingo %q", h, headers[0].Get(h), headers[1].Get(h))
			}
		}
	}
	status = http.StatusOK
	if direct, err := oc.GenerateContent(context.Background(), msgs, fns); err != nil || direct.Choices[0].FuncCall.Name != "mcp_demo" ||
		!strings.Contains(bodies[0]["messages"].([]any)[1].(map[string]any)["content"].(string), "<x>") {
		t.Errorf("direct call: %v, %+v", err, direct)
	}
}

// TestOpenAIOtherCallsGoToLangchaingo checks that a call with options other
// than tools, or with parts other than one text, is sent by langchaingo.
func TestOpenAIOtherCallsGoToLangchaingo(t *testing.T) {
	var got []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var v map[string]any
		_ = json.NewDecoder(r.Body).Decode(&v)
		got = append(got, v)
		_, _ = io.WriteString(w, `{"choices":[{"finish_reason":"stop","message":{"role":"assistant","content":"hi"}}]}`)
	}))
	defer srv.Close()
	env := map[string]string{EnvProvider: "openai", EnvOpenAIBaseURL: srv.URL, EnvModel: "gpt-4o"}
	m, _, err := FromEnv(context.Background(), func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.GenerateContent(context.Background(), []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeHuman, "a")}, llms.WithMaxTokens(7)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.GenerateContent(context.Background(), []llms.MessageContent{{Role: llms.ChatMessageTypeHuman,
		Parts: []llms.ContentPart{llms.TextContent{Text: "a"}, llms.TextContent{Text: "b"}}}}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0]["max_completion_tokens"] != float64(7) {
		t.Fatalf("requests %v", got)
	}
	if _, isList := got[1]["messages"].([]any)[0].(map[string]any)["content"].([]any); !isList {
		t.Errorf("two parts were not sent as a list: %v", got[1])
	}
	if directModel("o3-mini") || directModel("GPT-5") || !directModel("gpt-4o-mini") {
		t.Error("directModel")
	}
}
