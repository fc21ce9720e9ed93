package tree

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree/prompt"
)

// errNoValidChoice ends a decision whose answers all failed; the run then
// ends with a forced text answer.
var errNoValidChoice = errors.New("no valid option chosen")

const forcedInstruction = "You must now answer the user by calling text_response. Write the best " +
	"answer you can from the environment and the tasks completed; if the task could not be " +
	"finished, say briefly why."

// decision is a validated choice at a node.
type decision struct {
	opt       *option
	args      map[string]any
	reasoning string
}

// decide asks the model to choose one of node's available options,
// re-asking with feedback up to MaxRetries times.
func (r *run) decide(ctx context.Context, node *Node) (d decision, err error) {
	ctx, span := startDecision(ctx, node.id)
	defer func() { endDecision(span, d, err) }()
	avail, unavail := splitOptions(node, &r.c.env)
	if len(avail) == 0 {
		return decision{}, errNoValidChoice
	}
	msgs, err := r.messages(node, avail, unavail)
	if err != nil {
		return decision{}, fmt.Errorf("decision context: %w", err)
	}
	fns := prompt.Functions(avail)
	for attempt := 0; attempt <= r.opts.MaxRetries; attempt++ {
		resp, err := r.generate(ctx, msgs, fns)
		if err != nil {
			return decision{}, err
		}
		ch, perr := readChoice(resp)
		var d decision
		if perr == nil {
			d, perr = resolve(ch, node, avail, unavail)
		}
		if perr == nil {
			return d, nil
		}
		r.logger.Debug("decision rejected", logKeyNode, node.id, "attempt", attempt+1, logKeyErr, perr)
		msgs = append(msgs,
			llms.TextParts(llms.ChatMessageTypeAI, describe(ch)),
			llms.TextParts(llms.ChatMessageTypeHuman, "Your answer could not be used: "+perr.Error()+
				". Call exactly one of these functions: "+names(avail)+"."))
	}
	return decision{}, errNoValidChoice
}

// generate calls the model with the model timeout. Its errors end the run.
func (r *run) generate(ctx context.Context, msgs []llms.MessageContent, fns []llms.Tool) (*llms.ContentResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	mctx, cancel := context.WithTimeout(ctx, r.opts.ModelTimeout)
	defer cancel()
	mctx, span := r.opts.startModelCall(mctx)
	resp, err := r.model.GenerateContent(mctx, msgs, llms.WithTools(fns))
	endModelCall(span, resp, err)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("decision model: %w", err)
	}
	return resp, nil
}

// messages builds a decision's messages within the prompt budget and logs
// what was folded to keep it there.
func (r *run) messages(node *Node, avail []prompt.Option, unavail []prompt.Unavailable) ([]llms.MessageContent, error) {
	tasks, foldedTasks := prompt.FoldTasks(r.tasks)
	dc := &prompt.Context{
		UserPrompt:          r.query,
		ConversationSummary: r.history.Summary,
		ConversationHistory: r.history.Recent,
		NodeID:              node.id,
		Instruction:         node.instruction,
		AvailableOptions:    avail,
		UnavailableOptions:  unavail,
		Environment:         r.promptEnv(),
		TasksCompleted:      tasks,
		PreviousErrors:      prompt.FoldErrors(r.errs),
		TreeCount:           fmt.Sprintf("%d/%d", r.pass, r.opts.RecursionLimit),
		Recent:              r.added,
		EnvLimit:            r.opts.MaxPromptEnvironment,
		Budget:              prompt.Budget(r.opts.MaxPromptBytes),
		Forms:               &r.c.forms,
		Describe:            r.opts.DescribeOptions,
	}
	msgs, st, err := prompt.Messages(r.intro+node.instruction, dc)
	if err != nil {
		return nil, err
	}
	if r.history.Folded > 0 || foldedTasks > 0 || st.Short > 0 || st.Omitted > 0 {
		r.logger.Debug("decision prompt folded", logKeyNode, node.id,
			"prompt_bytes", len(msgs[1].Parts[0].(llms.TextContent).Text), "budget", dc.Budget,
			"messages_folded", r.history.Folded, "tasks_folded", foldedTasks,
			"results_short", st.Short, "results_left_out", st.Omitted, "environment_limit", st.EnvLimit)
	}
	return msgs, nil
}

// splitOptions sorts a node's options into available and unavailable ones.
// A branch is available when it holds at least one option.
func splitOptions(n *Node, env *tools.Environment) ([]prompt.Option, []prompt.Unavailable) {
	avail := make([]prompt.Option, 0, len(n.options))
	unavail := []prompt.Unavailable{}
	for _, o := range n.options {
		inputs, params := o.spec()
		if o.isBranch() {
			if len(o.next.options) == 0 {
				unavail = append(unavail, prompt.Unavailable{Name: o.id, Reason: "this branch holds no options"})
				continue
			}
			avail = append(avail, prompt.Option{Name: o.id, Description: o.next.description, Params: params})
			continue
		}
		if a, ok := o.tool.(tools.Availability); ok {
			if ok, reason := a.Available(env); !ok {
				unavail = append(unavail, prompt.Unavailable{Name: o.id, Reason: reason})
				continue
			}
		}
		avail = append(avail, prompt.Option{Name: o.id, Description: o.tool.Description(),
			End: o.tool.EndsRun(), Inputs: inputs, Params: params})
	}
	return avail, unavail
}

// resolve checks a choice against the node's available options and fills
// defaults.
func resolve(ch choice, node *Node, avail []prompt.Option, unavail []prompt.Unavailable) (decision, error) {
	if !slices.ContainsFunc(avail, func(a prompt.Option) bool { return a.Name == ch.name }) {
		for _, u := range unavail {
			if u.Name == ch.name {
				return decision{}, fmt.Errorf("option %q is unavailable: %s", ch.name, u.Reason)
			}
		}
		return decision{}, fmt.Errorf("%q is not an option here: %w", ch.name, tools.ErrUnknownTool)
	}
	_, o := node.option(ch.name) // an available option's name is one of node's
	d := decision{opt: o, reasoning: ch.reasoning}
	if o.isBranch() {
		return d, nil
	}
	inputs, _ := o.spec()
	d.args = withDefaults(inputs, ch.args)
	for _, in := range inputs {
		v, ok := d.args[in.Name]
		if !ok || v == nil {
			if in.Required {
				return decision{}, fmt.Errorf("%s needs the input %q", ch.name, in.Name)
			}
			continue
		}
		if s, isString := v.(string); isString && len(in.Enum) > 0 && !slices.Contains(in.Enum, s) {
			return decision{}, fmt.Errorf("input %q of %s must be one of %s, not %q",
				in.Name, ch.name, strings.Join(in.Enum, ", "), s)
		}
	}
	return d, nil
}

// withDefaults returns args plus the default of every input left out.
// Object and array defaults are copied, so tools cannot change them.
func withDefaults(inputs []tools.Input, args map[string]any) map[string]any {
	out := make(map[string]any, len(inputs))
	maps.Copy(out, args)
	for _, in := range inputs {
		if _, ok := out[in.Name]; ok || in.Default == nil {
			continue
		}
		switch d := in.Default.(type) {
		case map[string]any:
			out[in.Name] = maps.Clone(d)
		case []any:
			out[in.Name] = slices.Clone(d)
		default:
			out[in.Name] = d
		}
	}
	return out
}

// describe restates a rejected answer for the retry's conversation.
func describe(ch choice) string {
	if ch.name == "" {
		return "(no function call)"
	}
	args, _ := tools.Marshal(ch.args)
	return fmt.Sprintf("I call %s with %s.", ch.name, args)
}

func names(avail []prompt.Option) string {
	n := make([]string, len(avail))
	for i, a := range avail {
		n[i] = a.Name
	}
	return strings.Join(n, ", ")
}

// forcedAnswer ends the run with a text answer: the model is asked once
// more with only text_response offered; if that fails, a plain summary of
// what was done is the answer.
func (r *run) forcedAnswer(ctx context.Context, reason string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.logger.Debug("forcing a text answer", logKeyReason, reason)
	tr := tools.TextResponse()
	avail := []prompt.Option{{Name: tr.Name(), Description: tr.Description(), End: true, Inputs: tr.Inputs()}}
	node := &Node{id: r.tree.root.id, instruction: forcedInstruction + " Reason: " + reason + "."}
	text := ""
	msgs, err := r.messages(node, avail, []prompt.Unavailable{})
	if err == nil {
		var resp *llms.ContentResponse
		resp, err = r.generate(ctx, msgs, prompt.Functions(avail))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil {
			ch, perr := readChoice(resp)
			switch {
			case perr == nil && ch.name == tr.Name():
				text, _ = ch.args["text"].(string)
			case errors.Is(perr, errNoDecision):
				text = resp.Choices[0].Content // a plain-text answer
			}
		}
	}
	if err != nil {
		r.logger.Warn("forced text answer falls back to a summary", logKeyErr, err)
	}
	if strings.TrimSpace(text) == "" {
		text = r.fallbackText(reason)
	}
	r.emit(tools.NewText(strings.TrimSpace(text)))
	return nil
}

// fallbackText says what happened when no model answer could be had.
func (r *run) fallbackText(reason string) string {
	var b strings.Builder
	b.WriteString("I could not complete this request: " + reason + ".")
	if len(r.tasks) > 0 {
		b.WriteString(" Steps taken:")
		for _, t := range r.tasks {
			status := t.Result
			if t.Error {
				status = "failed: " + t.Result
			}
			fmt.Fprintf(&b, "\n- %s: %s", t.Tool, status)
		}
	}
	return b.String()
}
