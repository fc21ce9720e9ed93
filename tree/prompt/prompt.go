package prompt

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

// Option is an available option of a decision: a tool or a branch.
type Option struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	End         bool   `json:"end"`
	Inputs      Inputs `json:"inputs"`
	// Params is the JSON Schema of the option's function; nil: built from
	// Inputs.
	Params map[string]any `json:"-"`
}

// Unavailable is an option that cannot be chosen, and why.
type Unavailable struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// ResultKey names one list of the environment: a tool and its result name.
type ResultKey struct{ Tool, Name string }

// Context is what a decision's human message is made of; its field order
// is the contract's key order (docs/DECISION_PROMPT.md).
type Context struct {
	UserPrompt          string
	ConversationSummary string
	ConversationHistory []Message
	NodeID              string
	Instruction         string
	AvailableOptions    []Option
	UnavailableOptions  []Unavailable
	Environment         map[string]map[string][]tools.EnvEntry
	TasksCompleted      []Task
	PreviousErrors      []PreviousError
	TreeCount           string

	// Recent lists the results the query added, oldest first, and
	// EnvLimit bounds the environment's bytes (negative: no bound); see
	// writeEnvironment. Budget bounds the whole message (negative: no
	// bound; see [Budget]): the environment gets what the rest leaves, at
	// most EnvLimit. Forms (nil: none) keeps the forms of the entries
	// shown between decisions and queries; see [FormCache].
	Recent   []ResultKey
	EnvLimit int
	Budget   int
	Forms    *FormCache
	// Describe gives each option its description and inputs; without it
	// an option is its name and end.
	Describe bool
}

// Stats says what a decision's human message left out: how many results
// it shows short and how many it leaves out, and the environment's limit.
type Stats struct {
	Short, Omitted, EnvLimit int
}

// Inputs are a tool's inputs; they marshal as an object keyed by input
// name, in the tool's input order, because the model reads them in order.
type Inputs []tools.Input

// MarshalJSON writes {"<name>": {"type", "description", "default"?,
// "enum"?, "required"}, ...}.
func (in Inputs) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, x := range in {
		if i > 0 {
			b.WriteByte(',')
		}
		tools.WriteJSONString(&b, x.Name)
		b.WriteString(`:{"type":`)
		tools.WriteJSONString(&b, x.Type)
		b.WriteString(`,"description":`)
		tools.WriteJSONString(&b, x.Description)
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
				tools.WriteJSONString(&b, e)
			}
			b.WriteByte(']')
		}
		b.WriteString(`,"required":` + strconv.FormatBool(x.Required) + "}")
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Functions returns one function definition per available option.
func Functions(avail []Option) []llms.Tool {
	fns := make([]llms.Tool, len(avail))
	for i, a := range avail {
		params := a.Params
		if params == nil {
			params = InputSchema(a.Inputs)
		}
		fns[i] = llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
			Name: a.Name, Description: a.Description, Parameters: params}}
	}
	return fns
}

// InputSchema builds the JSON Schema object of a tool's inputs.
func InputSchema(in []tools.Input) map[string]any {
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

// Messages builds the system and human messages of a decision: the system
// message is instruction and the rules of a decision, the human message is
// dc as JSON within its budget.
func Messages(instruction string, dc *Context) ([]llms.MessageContent, Stats, error) {
	pb := promptBuffers.Get().(*promptBuffer)
	defer pb.release()
	human, st, err := dc.encode(pb)
	if err != nil {
		return nil, Stats{}, err
	}
	return []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, instruction+systemRules),
		llms.TextParts(llms.ChatMessageTypeHuman, string(human)),
	}, st, nil
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
// returns it, valid until pb is reused, with what the environment left
// out. With Describe set it is what tools.Marshal would write (without,
// the options are cut short). It is
// built by hand because encoding/json re-compacts the output of every
// option's inputs Marshaler, which dominated a decision step with many
// options.
func (dc *Context) encode(pb *promptBuffer) ([]byte, Stats, error) {
	pb.b.Reset()
	pb.tail.Reset()
	b := &pb.b
	b.Grow(512 + 512*len(dc.AvailableOptions))
	b.WriteString(`{"user_prompt":`)
	tools.WriteJSONString(b, dc.UserPrompt)
	b.WriteString(`,"conversation_summary":`)
	tools.WriteJSONString(b, dc.ConversationSummary)
	b.WriteString(`,"conversation_history":`)
	if err := writeJSON(b, dc.ConversationHistory); err != nil {
		return nil, Stats{}, err
	}
	b.WriteString(`,"node":{"id":`)
	tools.WriteJSONString(b, dc.NodeID)
	b.WriteString(`,"instruction":`)
	tools.WriteJSONString(b, dc.Instruction)
	b.WriteString(`},"available_options":[`)
	for i, o := range dc.AvailableOptions {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"name":`)
		tools.WriteJSONString(b, o.Name)
		if !dc.Describe {
			b.WriteString(`,"end":` + strconv.FormatBool(o.End) + `}`)
			continue
		}
		b.WriteString(`,"description":`)
		tools.WriteJSONString(b, o.Description)
		b.WriteString(`,"end":` + strconv.FormatBool(o.End) + `,"inputs":`)
		in, err := o.Inputs.MarshalJSON()
		if err != nil {
			return nil, Stats{}, err
		}
		b.Write(in)
		b.WriteByte('}')
	}
	b.WriteString(`],"unavailable_options":`)
	if err := writeJSON(b, dc.UnavailableOptions); err != nil {
		return nil, Stats{}, err
	}
	b.WriteString(`,"environment":`)
	// The rest of the message is written first, so that the environment
	// gets what it leaves of the budget.
	tail := &pb.tail
	tail.WriteString(`,"tasks_completed":`)
	if err := writeJSON(tail, dc.TasksCompleted); err != nil {
		return nil, Stats{}, err
	}
	tail.WriteString(`,"previous_errors":`)
	if err := writeJSON(tail, dc.PreviousErrors); err != nil {
		return nil, Stats{}, err
	}
	tail.WriteString(`,"tree_count":`)
	tools.WriteJSONString(tail, dc.TreeCount)
	tail.WriteByte('}')
	lim := envLimits{total: dc.EnvLimit, old: -1}
	if dc.Budget >= 0 {
		rest := max(dc.Budget-b.Len()-tail.Len(), minPromptEnvironment)
		if lim.total < 0 || rest < lim.total {
			lim.total = rest
		}
		lim.old = dc.Budget / oldEnvDiv
	}
	st, err := writeEnvironment(b, dc.Environment, dc.Recent, lim, dc.Forms)
	if err != nil {
		return nil, Stats{}, err
	}
	b.Write(tail.Bytes())
	return b.Bytes(), Stats{Short: st.short, Omitted: st.omitted, EnvLimit: lim.total}, nil
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
