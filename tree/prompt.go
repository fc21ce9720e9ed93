package tree

import (
	"bytes"
	"strconv"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/elysia-go/elysia/tools"
)

// systemRules follow the node's instruction in the system message
// (docs/DECISION_PROMPT.md).
const systemRules = `

Choose exactly one of the available options by calling its function. Fill its inputs from the user's prompt, the conversation history and the environment. Your message content, if any, is one short sentence telling the user what you are doing.
Options in unavailable_options cannot be chosen. Do not repeat a completed task unless it failed; when previous_errors says how to fix the inputs, do so.
When the user's prompt has been answered, or nothing more can be done, choose an option whose "end" is true.
If you cannot call functions, answer with only a JSON object: {"function": "<option name>", "arguments": {...}, "reasoning": "<one sentence>"}.`

// Message is one turn of a conversation's history.
type Message struct {
	Role    string `json:"role"` // "user" or "assistant"
	Content string `json:"content"`
}

// Task is one tool run of the current query, as the decision model sees it.
type Task struct {
	Tool   string         `json:"tool"`
	Inputs map[string]any `json:"inputs"`
	Result string         `json:"result"`
	Error  bool           `json:"error"`
}

// PreviousError is a self-healing error of the current query.
type PreviousError struct {
	Tool         string `json:"tool"`
	ErrorMessage string `json:"error_message"`
	Feedback     string `json:"feedback"`
}

// decisionContext is the human message of a decision; its field order is
// the contract's key order.
type decisionContext struct {
	UserPrompt          string                                 `json:"user_prompt"`
	ConversationSummary string                                 `json:"conversation_summary"`
	ConversationHistory []Message                              `json:"conversation_history"`
	Node                nodeInfo                               `json:"node"`
	AvailableOptions    []optionInfo                           `json:"available_options"`
	UnavailableOptions  []unavailableInfo                      `json:"unavailable_options"`
	Environment         map[string]map[string][]tools.EnvEntry `json:"environment"`
	TasksCompleted      []Task                                 `json:"tasks_completed"`
	PreviousErrors      []PreviousError                        `json:"previous_errors"`
	TreeCount           string                                 `json:"tree_count"`

	// recent lists the results the query added, oldest first, and
	// envLimit bounds the environment's bytes; see writeEnvironment.
	// budget bounds the whole message (negative: no bound): the
	// environment gets what the rest leaves, at most envLimit. cache keeps
	// the forms of the query's results between its decisions.
	recent   []resultKey
	envLimit int
	budget   int
	cache    formCache
	// describe gives each option its description and inputs (see
	// Options.DescribeOptions); without it an option is its name and end.
	describe bool
	// env is set by encode: what the environment left out, and its limit.
	env      envStats
	envBound int
}

type nodeInfo struct {
	ID          string `json:"id"`
	Instruction string `json:"instruction"`
}

type optionInfo struct {
	Name        string        `json:"name"`
	Description string        `json:"description"`
	End         bool          `json:"end"`
	Inputs      orderedInputs `json:"inputs"`

	opt *option
}

type unavailableInfo struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// orderedInputs marshals as an object keyed by input name, in the tool's
// input order, because the model reads them in order.
type orderedInputs []tools.Input

// MarshalJSON writes {"<name>": {"type", "description", "default"?,
// "enum"?, "required"}, ...}.
func (in orderedInputs) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, x := range in {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(&b, x.Name)
		b.WriteString(`:{"type":`)
		writeString(&b, x.Type)
		b.WriteString(`,"description":`)
		writeString(&b, x.Description)
		if x.Default != nil {
			d, err := tools.Marshal(x.Default)
			if err != nil {
				return nil, err
			}
			b.WriteString(`,"default":`)
			b.Write(d)
		}
		if len(x.Enum) > 0 {
			b.WriteString(`,"enum":[`)
			for j, e := range x.Enum {
				if j > 0 {
					b.WriteByte(',')
				}
				writeString(&b, e)
			}
			b.WriteByte(']')
		}
		b.WriteString(`,"required":` + strconv.FormatBool(x.Required) + "}")
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// splitOptions sorts a node's options into available and unavailable ones.
// A branch is available when it holds at least one option.
func splitOptions(n *Node, env *tools.Environment) ([]optionInfo, []unavailableInfo) {
	avail := make([]optionInfo, 0, len(n.options))
	unavail := []unavailableInfo{}
	for _, o := range n.options {
		if o.isBranch() {
			if len(o.next.options) == 0 {
				unavail = append(unavail, unavailableInfo{o.id, "this branch holds no options"})
				continue
			}
			avail = append(avail, optionInfo{Name: o.id, Description: o.next.description, opt: o})
			continue
		}
		if a, ok := o.tool.(tools.Availability); ok {
			if ok, reason := a.Available(env); !ok {
				unavail = append(unavail, unavailableInfo{o.id, reason})
				continue
			}
		}
		inputs, _ := o.spec()
		avail = append(avail, optionInfo{Name: o.id, Description: o.tool.Description(),
			End: o.tool.EndsRun(), Inputs: inputs, opt: o})
	}
	return avail, unavail
}

// functions returns one function definition per available option.
func functions(avail []optionInfo) []llms.Tool {
	fns := make([]llms.Tool, len(avail))
	for i, a := range avail {
		var params map[string]any
		if a.opt != nil {
			_, params = a.opt.spec()
		} else {
			params = inputSchema(a.Inputs)
		}
		fns[i] = llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
			Name: a.Name, Description: a.Description, Parameters: params}}
	}
	return fns
}

// inputSchema builds the JSON Schema object of a tool's inputs.
func inputSchema(in []tools.Input) map[string]any {
	props := make(map[string]any, len(in))
	required := []string{}
	for _, x := range in {
		p := map[string]any{"type": x.Type, "description": x.Description}
		if len(x.Enum) > 0 {
			p["enum"] = x.Enum
		}
		if x.Default != nil {
			p["default"] = x.Default
		}
		if x.Type == "array" {
			p["items"] = map[string]any{}
		}
		props[x.Name] = p
		if x.Required {
			required = append(required, x.Name)
		}
	}
	return map[string]any{"type": "object", "properties": props, "required": required}
}

// messages builds the system and human messages of a decision.
func messages(instruction string, dc *decisionContext) ([]llms.MessageContent, error) {
	pb := promptBuffers.Get().(*promptBuffer)
	defer pb.release()
	human, err := dc.encode(pb)
	if err != nil {
		return nil, err
	}
	return []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, instruction+systemRules),
		llms.TextParts(llms.ChatMessageTypeHuman, string(human)),
	}, nil
}

// promptBuffer holds the buffers a human message is written in. The
// message is copied out of them, so decisions reuse them instead of
// growing new ones by doubling every time.
type promptBuffer struct {
	b, tail bytes.Buffer
}

// maxPooledPrompt is the largest buffer kept for the next decision; the
// prompt budget (24 KiB by default) keeps most messages well under it.
const maxPooledPrompt = 256 << 10

var promptBuffers = sync.Pool{New: func() any { return new(promptBuffer) }}

// release empties pb and returns it to the pool, unless it grew too big.
func (pb *promptBuffer) release() {
	if pb.b.Cap() > maxPooledPrompt || pb.tail.Cap() > maxPooledPrompt {
		return
	}
	pb.b.Reset()
	pb.tail.Reset()
	promptBuffers.Put(pb)
}

// encode writes the context in the contract's key order into pb and
// returns it, valid until pb is reused. With describe set it is what
// tools.Marshal would write (without, the options are cut short). It is
// built by hand because encoding/json re-compacts the output of every
// option's inputs Marshaler, which dominated a decision step with many
// options.
func (dc *decisionContext) encode(pb *promptBuffer) ([]byte, error) {
	pb.b.Reset()
	pb.tail.Reset()
	b := &pb.b
	b.Grow(512 + 512*len(dc.AvailableOptions))
	b.WriteString(`{"user_prompt":`)
	writeString(b, dc.UserPrompt)
	b.WriteString(`,"conversation_summary":`)
	writeString(b, dc.ConversationSummary)
	b.WriteString(`,"conversation_history":`)
	if err := writeJSON(b, dc.ConversationHistory); err != nil {
		return nil, err
	}
	b.WriteString(`,"node":{"id":`)
	writeString(b, dc.Node.ID)
	b.WriteString(`,"instruction":`)
	writeString(b, dc.Node.Instruction)
	b.WriteString(`},"available_options":[`)
	for i, o := range dc.AvailableOptions {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"name":`)
		writeString(b, o.Name)
		if !dc.describe {
			b.WriteString(`,"end":` + strconv.FormatBool(o.End) + `}`)
			continue
		}
		b.WriteString(`,"description":`)
		writeString(b, o.Description)
		b.WriteString(`,"end":` + strconv.FormatBool(o.End) + `,"inputs":`)
		in, err := o.Inputs.MarshalJSON()
		if err != nil {
			return nil, err
		}
		b.Write(in)
		b.WriteByte('}')
	}
	b.WriteString(`],"unavailable_options":`)
	if err := writeJSON(b, dc.UnavailableOptions); err != nil {
		return nil, err
	}
	b.WriteString(`,"environment":`)
	// The rest of the message is written first, so that the environment
	// gets what it leaves of the budget.
	tail := &pb.tail
	tail.WriteString(`,"tasks_completed":`)
	if err := writeJSON(tail, dc.TasksCompleted); err != nil {
		return nil, err
	}
	tail.WriteString(`,"previous_errors":`)
	if err := writeJSON(tail, dc.PreviousErrors); err != nil {
		return nil, err
	}
	tail.WriteString(`,"tree_count":`)
	writeString(tail, dc.TreeCount)
	tail.WriteByte('}')
	lim := envLimits{total: dc.envLimit, old: -1}
	if dc.budget >= 0 {
		rest := max(dc.budget-b.Len()-tail.Len(), minPromptEnvironment)
		if lim.total < 0 || rest < lim.total {
			lim.total = rest
		}
		lim.old = dc.budget / oldEnvDiv
	}
	dc.envBound = lim.total
	st, err := writeEnvironment(b, dc.Environment, dc.recent, lim, dc.cache)
	if err != nil {
		return nil, err
	}
	dc.env = st
	b.Write(tail.Bytes())
	return b.Bytes(), nil
}

// writeJSON appends v marshalled; a nil slice becomes [].
func writeJSON(b *bytes.Buffer, v any) error {
	out, err := tools.Marshal(v)
	if err != nil {
		return err
	}
	if string(out) == "null" {
		out = []byte("[]")
	}
	b.Write(out)
	return nil
}
