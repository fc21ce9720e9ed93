package main

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/tools"
)

// TestTerminalApprovesSampling: on a terminal a sampling request is shown
// (system prompt, messages, max tokens) and approved with y; the reply is
// shown and sent with y, replaced with e, or denied with anything else.
func TestTerminalApprovesSampling(t *testing.T) {
	req := tools.ElicitationPayload{Server: "everything", Tool: "sampleLLM", Mode: tools.ElicitSampling, Message: "everything asks the model",
		Sampling: &tools.SamplingPayload{Stage: tools.SamplingRequest, SystemPrompt: "be \x1b[31mbrief", MaxTokens: 100,
			Messages: []tools.SamplingMessage{{Role: "user", Text: "write a haiku"}}}}
	reply := req
	rs := *req.Sampling
	rs.Stage, rs.Reply, rs.Model = tools.SamplingReply, "an old silent pond", "gpt-test"
	reply.Sampling = &rs

	for _, tt := range []struct {
		name, input string
		q           tools.ElicitationPayload
		want        tools.Answer
		shows       []string
	}{
		{"approve request", "y\n", req, tools.Answer{Action: tools.ElicitAccept}, []string{"system prompt: be", "user: write a haiku", "max tokens: 100", "Approve"}},
		{"deny request", "n\n", req, tools.Answer{Action: tools.ElicitDecline}, nil},
		{"empty denies", "\n", req, tools.Answer{Action: tools.ElicitDecline}, nil},
		{"send reply", "y\n", reply, tools.Answer{Action: tools.ElicitAccept}, []string{"an old silent pond", "gpt-test"}},
		{"edit reply", "e\na frog jumps in\n", reply, tools.Answer{Action: tools.ElicitAccept, Content: map[string]any{"reply": "a frog jumps in"}}, nil},
		{"deny reply", "no\n", reply, tools.Answer{Action: tools.ElicitDecline}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			a := &terminalAsker{in: bufio.NewReader(strings.NewReader(tt.input)), out: &out, interactive: true}
			got, err := a.answer(t.Context(), tt.q, nil)
			if err != nil || got.Action != tt.want.Action || got.Reason != "" || len(got.Content) != len(tt.want.Content) ||
				(tt.want.Content != nil && got.Content["reply"] != tt.want.Content["reply"]) {
				t.Errorf("answer = %+v, %v; want %+v", got, err, tt.want)
			}
			for _, s := range tt.shows {
				if !strings.Contains(out.String(), s) {
					t.Errorf("the terminal lacks %q:\n%s", s, out.String())
				}
			}
			if strings.Contains(out.String(), "\x1b") {
				t.Errorf("a control character reached the terminal: %q", out.String())
			}
		})
	}
}

// TestNoTerminalRefusesSampling: without a terminal a sampling request is
// refused with the reason printed, whatever ELYSIA_ELICITATION says (that
// answers forms, never approves the model's use).
func TestNoTerminalRefusesSampling(t *testing.T) {
	var out bytes.Buffer
	a := &terminalAsker{in: bufio.NewReader(strings.NewReader("y\n")), out: &out, policy: "accept-defaults"}
	q := tools.ElicitationPayload{Server: "everything", Mode: tools.ElicitSampling, Message: "everything asks the model",
		Sampling: &tools.SamplingPayload{Stage: tools.SamplingRequest, Messages: []tools.SamplingMessage{{Role: "user", Text: "hi"}}}}
	got, err := a.answer(t.Context(), q, nil)
	if err != nil || got.Action != tools.ElicitDecline || !strings.Contains(got.Reason, "no terminal") {
		t.Errorf("answer = %+v, %v; want a decline saying there is no terminal", got, err)
	}
	if !strings.Contains(out.String(), "refused: no terminal") {
		t.Errorf("the reason is not printed:\n%s", out.String())
	}
}

// TestMCPCallSamplingAsk: `elysia mcp call` of a server with "sampling":
// true and no terminal refuses the request, saying why.
func TestMCPCallSamplingAsk(t *testing.T) {
	dir := everythingConfig(t, `, "sampling": true`)
	_, out, errOut := runCLI(t, dir, []string{"ELYSIA_LLM=offline", "ELYSIA_ELICITATION=accept-defaults"}, "mcp", "call", "everything", "trigger-sampling-request", `{"prompt": "hello"}`)
	if strings.Contains(out, "offline-planner") || !strings.Contains(errOut+out, "no terminal to approve") {
		t.Errorf("sampling without a terminal:\n%s\n%s", out, errOut)
	}
}
