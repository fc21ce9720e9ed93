package tree

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/tmc/langchaingo/llms"
)

func TestParseDecision(t *testing.T) {
	tests := []struct {
		name      string
		text      string
		wantName  string
		wantArgs  string
		reasoning string
		wantErr   bool
	}{
		{"bare object", `{"function":"mcp_todo","arguments":{"action":"list"}}`, "mcp_todo", `{"action":"list"}`, "", false},
		{"prose around", `Sure! I will list them: {"tool": "mcp_todo", "inputs": {"action": "list"}, "reasoning": "Listing."} Hope that helps.`, "mcp_todo", `{"action":"list"}`, "Listing.", false},
		{"json fence", "Here:\n```json\n{\"name\": \"text_response\", \"parameters\": {\"text\": \"hi\"}}\n```\n", "text_response", `{"text":"hi"}`, "", false},
		{"plain fence", "```\n{\"function\": \"mcp_todo\"}\n```", "mcp_todo", `{}`, "", false},
		{"string arguments", `{"function":"mcp_todo","arguments":"{\"action\":\"execute\",\"tool_inputs\":{\"priority\":2}}"}`, "mcp_todo", `{"action":"execute","tool_inputs":{"priority":2}}`, "", false},
		{"openai shape", `{"function":{"name":"mcp_todo","arguments":"{\"action\":\"list\"}"}}`, "mcp_todo", `{"action":"list"}`, "", false},
		{"braces in prose first", `I think {this} is it: {"function":"a","arguments":{}}`, "a", `{}`, "", false},
		{"nested object without name first", `{"x":{"y":1}} then {"tool":"b"}`, "b", `{}`, "", false},
		{"bad arguments", `{"function":"a","arguments":[1,2]}`, "a", "", "", true},
		{"no object", `I would list the tools.`, "", "", "", true},
		{"empty", ``, "", "", "", true},
		{"unclosed", `{"function": "a", "arguments": {`, "", "", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseDecision(tc.text)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if got.name != tc.wantName {
				t.Errorf("name = %q, want %q", got.name, tc.wantName)
			}
			if tc.wantErr {
				return
			}
			args, _ := json.Marshal(got.args)
			if string(args) != tc.wantArgs {
				t.Errorf("args = %s, want %s", args, tc.wantArgs)
			}
			if got.reasoning != tc.reasoning {
				t.Errorf("reasoning = %q, want %q", got.reasoning, tc.reasoning)
			}
		})
	}
}

func TestReadChoice(t *testing.T) {
	resp := func(c *llms.ContentChoice) *llms.ContentResponse {
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{c}}
	}
	tests := []struct {
		name     string
		resp     *llms.ContentResponse
		wantName string
		wantErr  bool
	}{
		{"nil", nil, "", true},
		{"no choices", &llms.ContentResponse{}, "", true},
		{"tool call", resp(&llms.ContentChoice{ToolCalls: []llms.ToolCall{{FunctionCall: &llms.FunctionCall{Name: "a", Arguments: `{"x":1}`}}}}), "a", false},
		{"empty arguments", resp(&llms.ContentChoice{ToolCalls: []llms.ToolCall{{FunctionCall: &llms.FunctionCall{Name: "a"}}}}), "a", false},
		{"invalid JSON arguments", resp(&llms.ContentChoice{ToolCalls: []llms.ToolCall{{FunctionCall: &llms.FunctionCall{Name: "a", Arguments: `{"x":`}}}}), "a", true},
		{"legacy function call", resp(&llms.ContentChoice{FuncCall: &llms.FunctionCall{Name: "b", Arguments: `{}`}}), "b", false},
		{"text fallback", resp(&llms.ContentChoice{Content: `{"function":"c"}`}), "c", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readChoice(tc.resp)
			if (err != nil) != tc.wantErr || got.name != tc.wantName {
				t.Errorf("got %q, %v; want %q, error %v", got.name, err, tc.wantName, tc.wantErr)
			}
		})
	}
	if _, err := readChoice(resp(&llms.ContentChoice{Content: "hello"})); !errors.Is(err, errNoDecision) {
		t.Errorf("plain text: %v", err)
	}
}

func FuzzParseDecision(f *testing.F) {
	for _, s := range []string{
		`{"function":"mcp_todo","arguments":{"action":"list"}}`,
		"```json\n{\"tool\":\"a\",\"inputs\":\"{\\\"x\\\":1}\"}\n```",
		`text {"name": {"name": "x", "arguments": "{}"}} more`,
		`{{{{"function":`, "```", `{"function":"a","arguments":"\"nested\""}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		c, err := parseDecision(text)
		if err == nil && c.name == "" {
			t.Errorf("no error but no name for %q", text)
		}
		if err == nil && c.args == nil {
			t.Errorf("nil args for %q", text)
		}
		_, _ = readChoice(&llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: text,
			ToolCalls: []llms.ToolCall{{FunctionCall: &llms.FunctionCall{Name: "x", Arguments: text}}}}}})
	})
}
