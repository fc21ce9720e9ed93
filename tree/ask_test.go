package tree

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/tools"
)

// askingTool asks its run's user one question and reports the answer.
type askingTool struct{}

func (askingTool) Name() string          { return "ask_user" }
func (askingTool) Description() string   { return "asks the user for a name" }
func (askingTool) EndsRun() bool         { return false }
func (askingTool) Inputs() []tools.Input { return nil }

func (askingTool) Run(ctx context.Context, _ tools.Call, emit tools.Emitter) (tools.Result, error) {
	asker, ok := emit.(tools.Asker)
	if !ok {
		return tools.ErrorResult("no asker", ""), nil
	}
	check := func(c map[string]any) (map[string]any, error) {
		if name, _ := c["name"].(string); name == "" {
			return nil, &tools.ArgumentError{Tool: "the form", Problems: []string{"/name: required"}}
		}
		return c, nil
	}
	ans, err := asker.Ask(ctx, tools.Question{Payload: tools.ElicitationPayload{Server: "s", Mode: "form", Message: "Your name?"}, Check: check})
	if err != nil {
		return tools.Result{}, err
	}
	return tools.Result{Name: "ask_user", LLMText: fmt.Sprintf("%s %v", ans.Action, ans.Content["name"])}, nil
}

// TestAskReachesOnlyTheRunsUser: a tool's question becomes an elicitation
// event of the run; only the run's user can answer it, a bad answer is
// refused and the question keeps waiting, and the answer reaches the tool.
func TestAskReachesOnlyTheRunsUser(t *testing.T) {
	m := NewManager(nil)
	m.SetTools([]Placement{{Tool: askingTool{}}})
	c, err := m.Conversation(t.Context(), "alice", "c1")
	if err != nil {
		t.Fatal(err)
	}
	model := script(step{call: "ask_user", args: `{}`}, step{call: "text_response", args: `{"text":"done"}`})
	asked := make(chan string, 1)
	var rec recorder
	emit := func(e tools.Envelope) {
		rec.emit(e)
		if e.Type == tools.EventElicitation {
			var p tools.ElicitationPayload
			if err := json.Unmarshal(e.Payload, &p); err != nil {
				t.Error(err)
			}
			asked <- p.ElicitationID
		}
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(t.Context(), model, "ask me", "q1", emit) }()
	id := <-asked

	ctx := t.Context()
	if err := m.Answer(ctx, "bob", id, tools.Answer{Action: tools.ElicitAccept, Content: map[string]any{"name": "Bob"}}); !errors.Is(err, ErrNotFound) {
		t.Errorf("bob answering alice's question: %v, want ErrNotFound", err)
	}
	var ae *tools.ArgumentError
	if err := m.Answer(ctx, "alice", id, tools.Answer{Action: tools.ElicitAccept, Content: map[string]any{}}); !errors.As(err, &ae) {
		t.Errorf("a bad answer: %v, want an ArgumentError", err)
	}
	if err := m.Answer(ctx, "alice", id, tools.Answer{Action: "maybe"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("an unknown action: %v, want ErrInvalid", err)
	}
	if err := m.Answer(ctx, "alice", id, tools.Answer{Action: tools.ElicitAccept, Content: map[string]any{"name": "Alice"}}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(model.prompts[1], "accept Alice") {
		t.Errorf("the tool did not get alice's answer; the next decision saw %s", model.prompts[1])
	}
	if err := m.Answer(ctx, "alice", id, tools.Answer{Action: tools.ElicitDecline}); !errors.Is(err, ErrNotFound) {
		t.Errorf("answering again after the run: %v, want ErrNotFound", err)
	}
	if got, want := rec.types(), "title tree_update elicitation tree_update status text completed"; got != want {
		t.Errorf("events:\n got %s\nwant %s", got, want)
	}
}
