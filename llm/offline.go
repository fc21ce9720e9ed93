package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// Prefix starts every answer of the offline planner, so users can tell it
// from a language model.
const Prefix = "[offline planner]"

// maxAnswer caps the result text the planner quotes in an answer.
const maxAnswer = 4000

// NewOffline returns the offline planner: an llms.Model that decides without
// a language model. It reads the decision context of docs/DECISION_PROMPT.md
// from the last human message and the offered functions from the call's
// tools (llms.WithTools), and answers with exactly one tool call: list the
// gateway that best matches the user's prompt, execute its best-matching
// tool with arguments read from the prompt, then answer with text_response,
// whose text starts with [Prefix]. With no function offered it answers with
// Content alone.
//
// The planner is deterministic, does no I/O and holds no state; it is safe
// for concurrent use.
func NewOffline() llms.Model { return offline{} }

// offline is the offline planner; see NewOffline.
type offline struct{}

var _ llms.Model = offline{}

// Call answers a plain text prompt; with no functions offered the planner
// can only say what it is.
func (o offline) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, o, prompt, options...)
}

// GenerateContent decides one step. The choice holds one tool call and a
// one-sentence update as Content; when no function is offered it holds
// only Content, starting with Prefix. It fails only when ctx is done.
func (o offline) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var opts llms.CallOptions
	for _, opt := range options {
		opt(&opts)
	}
	p := planner{d: parseDecision(lastHumanText(msgs)), fns: offeredFunctions(&opts)}
	c := p.decide()
	choice := &llms.ContentChoice{Content: c.update, StopReason: "stop"}
	if c.name != "" {
		args, err := json.Marshal(c.args)
		if err != nil {
			return nil, fmt.Errorf("offline planner: encode arguments of %s: %w", c.name, err)
		}
		fc := llms.FunctionCall{Name: c.name, Arguments: string(args)}
		choice.ToolCalls = []llms.ToolCall{{ID: "call_offline_" + c.name, Type: "function", FunctionCall: &fc}}
		choice.FuncCall = &fc
		choice.StopReason = "tool_calls"
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{choice}}, nil
}

// choice is a decision: call name with args, telling the user update. An
// empty name means a text-only answer in update.
type choice struct {
	name   string
	args   map[string]any
	update string
}

// planner holds one decision's inputs.
type planner struct {
	d   decision
	fns []function
}

func (p *planner) decide() choice {
	if len(p.fns) == 0 {
		return choice{update: Prefix + " no language model is configured and no option was offered; " +
			"set ELYSIA_LLM or a provider's API key to chat freely"}
	}
	var gateways, branches []function
	for _, f := range p.fns {
		switch {
		case f.isGateway():
			gateways = append(gateways, f)
		case len(f.params.props) == 0 && f.name != answerTool:
			branches = append(branches, f)
		}
	}
	if p.finished() {
		return p.answer()
	}
	if wants, ok := p.asksForCatalogue(); ok && len(gateways) > 0 {
		return p.catalogue(gateways, wants)
	}
	if c, ok := p.readResource(gateways); ok {
		return c
	}
	if len(gateways) > 0 {
		return p.useGateways(gateways)
	}
	if len(branches) > 0 && !p.listedNothingMatches() {
		return p.enterBranch(branches)
	}
	return p.answer()
}

// finished reports whether the run has done what it can: a tool ran, or
// tools failed twice.
func (p *planner) finished() bool {
	for _, t := range p.d.TasksCompleted {
		if (t.Inputs[gatewayAction] == actionExecute || t.Inputs[gatewayAction] == actionReadResource) && !t.Error {
			return true
		}
	}
	return len(p.d.PreviousErrors) >= 2
}

// useGateways lists or executes on the gateway that best matches the prompt.
func (p *planner) useGateways(gateways []function) choice {
	q := terms(p.d.UserPrompt)
	best, bestScore := -1, 0
	for i, g := range gateways {
		s := score(q, g.name, g.description, nil)
		if tool, ts := p.bestTool(g.name, q); tool != nil {
			s += ts
		}
		if s > bestScore {
			best, bestScore = i, s
		}
	}
	if best < 0 {
		// Nothing matches yet: learn more by listing a gateway not listed.
		for _, g := range gateways {
			if !p.d.hasListed(g.name) && len(p.d.errorsFor(g.name)) == 0 {
				return p.list(g)
			}
		}
		return p.answer()
	}
	g := gateways[best]
	errs := p.d.errorsFor(g.name)
	if !p.d.hasListed(g.name) {
		if len(errs) > 0 {
			return p.answer()
		}
		return p.list(g)
	}
	tool, ts := p.bestTool(g.name, q)
	if tool == nil || ts == 0 {
		for _, other := range gateways {
			if !p.d.hasListed(other.name) && len(p.d.errorsFor(other.name)) == 0 {
				return p.list(other)
			}
		}
		return p.answer()
	}
	skip := p.skipTerms(g.name, tool.name)
	args := extractArgs(p.d.UserPrompt, tool.inputs, skip)
	_, failed, lastFailed := p.d.executes(g.name)
	failed = max(failed, len(errs))
	switch {
	case failed == 1:
		var msg string
		if len(errs) > 0 {
			msg = errs[len(errs)-1].ErrorMessage + "; " + errs[len(errs)-1].Feedback
		} else if lastFailed != nil {
			msg, _ = lastFailed.Result.(string)
		}
		var changed bool
		args, changed = adjustArgs(args, tool.inputs, msg, p.d.UserPrompt, skip)
		if !changed {
			return p.answer()
		}
	case failed > 1:
		return p.answer()
	}
	return choice{
		name: g.name,
		args: map[string]any{gatewayAction: actionExecute, gatewayToolName: tool.name, gatewayInputs: args},
		update: fmt.Sprintf("%s Running %s of %s with inputs read from your request.",
			Prefix, tool.name, serverName(g)),
	}
}

func (p *planner) list(g function) choice {
	return choice{
		name:   g.name,
		args:   map[string]any{gatewayAction: actionList},
		update: fmt.Sprintf("%s Listing the tools of %s to find one for your request.", Prefix, serverName(g)),
	}
}

// bestTool returns the listed tool of gateway that best matches the query
// terms, preferring among equals one whose required inputs the prompt
// fills, then the first listed. It returns nil when nothing is listed.
func (p *planner) bestTool(gateway string, q []string) (*listedTool, int) {
	tools := p.d.listedTools(gateway)
	best, bestScore, bestFilled := -1, -1, false
	for i, t := range tools {
		s := score(q, t.name, t.description, propNames(t.inputs))
		if s < bestScore {
			continue
		}
		filled := p.fillsRequired(t, gateway)
		if s > bestScore || filled && !bestFilled {
			best, bestScore, bestFilled = i, s, filled
		}
	}
	if best < 0 {
		return nil, 0
	}
	return &tools[best], bestScore
}

func (p *planner) fillsRequired(t listedTool, gateway string) bool {
	args := extractArgs(p.d.UserPrompt, t.inputs, p.skipTerms(gateway, t.name))
	for _, r := range t.inputs.required {
		if _, ok := args[r]; !ok {
			return false
		}
	}
	return true
}

// skipTerms are the words of the gateway's and the tool's names: they name
// the action, not its arguments.
func (p *planner) skipTerms(gateway, tool string) map[string]bool {
	return termSet(gateway, tool)
}

// listedNothingMatches reports whether tools were listed in this
// conversation and none of them matches the prompt, so entering a branch
// again would lead nowhere.
func (p *planner) listedNothingMatches() bool {
	q := terms(p.d.UserPrompt)
	listed := false
	for gateway := range p.d.Environment {
		if !p.d.hasListed(gateway) {
			continue
		}
		listed = true
		if _, s := p.bestTool(gateway, q); s > 0 {
			return false
		}
	}
	return listed
}

// enterBranch chooses the branch that best matches the prompt, the first
// on a tie.
func (p *planner) enterBranch(branches []function) choice {
	q := terms(p.d.UserPrompt)
	best, bestScore := 0, -1
	for i, b := range branches {
		if s := score(q, b.name, b.description, nil); s > bestScore {
			best, bestScore = i, s
		}
	}
	b := branches[best]
	return choice{name: b.name, args: map[string]any{},
		update: fmt.Sprintf("%s Looking in %s for a tool that fits.", Prefix, b.name)}
}

// answer ends the run with text_response, or with text alone when that
// function is not offered.
func (p *planner) answer() choice {
	text := p.answerText()
	for _, f := range p.fns {
		if f.name == answerTool {
			return choice{name: answerTool, args: map[string]any{answerInput: text},
				update: Prefix + " Answering with what the tools gave."}
		}
	}
	return choice{update: text}
}

// answerText summarises the run: the last tool result, else the last
// error, else what could have been used. A result reached only after the
// planner changed the inputs says so, and why: a value the user gave may
// have been left out or clamped.
func (p *planner) answerText() string {
	lastErr := ""
	if n := len(p.d.PreviousErrors); n > 0 {
		e := p.d.PreviousErrors[n-1]
		lastErr = e.ErrorMessage
		if e.Feedback != "" && e.Feedback != lastErr {
			lastErr += " (" + e.Feedback + ")"
		}
	}
	for i := len(p.d.TasksCompleted) - 1; i >= 0; i-- {
		t := p.d.TasksCompleted[i]
		if t.Inputs[gatewayAction] != actionExecute || t.Error {
			continue
		}
		name, _ := t.Inputs[gatewayToolName].(string)
		text := fmt.Sprintf("%s Ran %s of %s: %s", Prefix, name, p.server(t.Tool), capText(p.resultText(t, name)))
		if lastErr != "" {
			text += fmt.Sprintf("\n(The first attempt was refused: %s; the inputs were adjusted, so check the result.)", capText(lastErr))
		}
		return text
	}
	if wants, ok := p.asksForCatalogue(); ok {
		if text := p.catalogueText(wants); text != "" {
			return capText(text)
		}
	}
	if lastErr != "" {
		return fmt.Sprintf("%s %s failed: %s", Prefix, p.server(p.d.PreviousErrors[len(p.d.PreviousErrors)-1].Tool), capText(lastErr))
	}
	return fmt.Sprintf("%s no tool matched your request; available: %s", Prefix, p.available())
}

// resultText is a tool result as text: the result's text fields, else the
// task's result (the text the tool gave the model), else its objects as
// JSON.
func (p *planner) resultText(t task, tool string) string {
	var objs []string
	entries := p.d.Environment[t.Tool][tool]
	if len(entries) > 0 {
		var texts []string
		for _, obj := range entries[len(entries)-1].Objects {
			if s, ok := obj[answerInput].(string); ok {
				texts = append(texts, s)
				continue
			}
			clean := map[string]any{}
			for k, v := range obj {
				if !strings.HasPrefix(k, "_") {
					clean[k] = v
				}
			}
			if b, err := json.Marshal(clean); err == nil {
				objs = append(objs, string(b))
			}
		}
		if len(texts) > 0 {
			return strings.Join(texts, "\n")
		}
	}
	if s, ok := t.Result.(string); ok && s != "" {
		return s
	}
	if len(objs) > 0 {
		return strings.Join(objs, "\n")
	}
	if t.Result != nil {
		if b, err := json.Marshal(t.Result); err == nil {
			return string(b)
		}
	}
	return "done, with no output"
}

// resourceURI finds a URI (scheme://...) in a prompt.
var resourceURI = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>]+`)

// readResource reads the resource a prompt names by its URI, on the gateway
// that offers resources and best matches the prompt; ok is false when the
// prompt names no URI, no gateway can read resources, or it was read.
func (p *planner) readResource(gateways []function) (choice, bool) {
	uri := strings.TrimRight(resourceURI.FindString(p.d.UserPrompt), ".,;:!?)")
	if uri == "" {
		return choice{}, false
	}
	for _, t := range p.d.TasksCompleted {
		if t.Inputs[gatewayAction] == actionReadResource {
			return choice{}, false
		}
	}
	q := terms(p.d.UserPrompt)
	best, bestScore := -1, -1
	for i, g := range gateways {
		action, _ := g.params.prop(gatewayAction)
		if !slices.Contains(action.enum, any(actionReadResource)) || !strings.Contains(g.description, "resources") {
			continue
		}
		if s := score(q, g.name, g.description, nil); s > bestScore {
			best, bestScore = i, s
		}
	}
	if best < 0 {
		return choice{}, false
	}
	g := gateways[best]
	return choice{
		name:   g.name,
		args:   map[string]any{gatewayAction: actionReadResource, "uri": uri},
		update: fmt.Sprintf("%s Reading %s from %s.", Prefix, uri, serverName(g)),
	}, true
}
