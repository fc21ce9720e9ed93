package llm

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/elysia-go/elysia/tools"
)

// Names the planner relies on. They are the project's own vocabulary (the
// built-in answer tool and the gateway's inputs, docs/DECISION_PROMPT.md),
// not any MCP server's.
const (
	answerTool      = "text_response"
	answerInput     = "text"
	gatewayAction   = "action"
	gatewayToolName = "tool_name"
	gatewayInputs   = "tool_inputs"
	actionList      = "list"
	actionExecute   = "execute"
	// actionReadResource reads a resource by its uri input.
	actionReadResource = "read_resource"
	listResult         = "list"
)

// decision is the planner's view of the human message: the decision context
// the tree sends. Fields the planner does not use are not decoded.
type decision struct {
	UserPrompt     string
	Environment    map[string]map[string][]tools.EnvEntry
	TasksCompleted []task
	PreviousErrors []prevError
}

type task struct {
	Tool   string         `json:"tool"`
	Inputs map[string]any `json:"inputs"`
	Result any            `json:"result"`
	Error  bool           `json:"error"`
}

type prevError struct {
	Tool         string `json:"tool"`
	ErrorMessage string `json:"error_message"`
	Feedback     string `json:"feedback"`
}

// parseDecision reads text as a decision context. Each field is decoded on
// its own, so one malformed field costs only that field; text that is not a
// JSON object is taken as the user's prompt itself.
func parseDecision(text string) decision {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &fields); err != nil {
		return decision{UserPrompt: text}
	}
	var d decision
	_ = json.Unmarshal(fields["user_prompt"], &d.UserPrompt)
	_ = json.Unmarshal(fields["environment"], &d.Environment)
	_ = json.Unmarshal(fields["tasks_completed"], &d.TasksCompleted)
	_ = json.Unmarshal(fields["previous_errors"], &d.PreviousErrors)
	return d
}

// lastHumanText returns the text of the last human message.
func lastHumanText(msgs []llms.MessageContent) string {
	for _, m := range slices.Backward(msgs) {
		if m.Role != llms.ChatMessageTypeHuman {
			continue
		}
		var b strings.Builder
		for _, p := range m.Parts {
			if t, ok := p.(llms.TextContent); ok {
				b.WriteString(t.Text)
			}
		}
		return b.String()
	}
	return ""
}

// function is one offered function (an option of the node).
type function struct {
	name, description string
	params            schema
}

// offeredFunctions returns the functions of the call, tools first, then the
// deprecated functions list.
func offeredFunctions(opts *llms.CallOptions) []function {
	var defs []llms.FunctionDefinition
	for _, t := range opts.Tools {
		if t.Function != nil {
			defs = append(defs, *t.Function)
		}
	}
	defs = append(defs, opts.Functions...)
	out := make([]function, 0, len(defs))
	for _, d := range defs {
		if d.Name == "" {
			continue
		}
		raw, err := json.Marshal(d.Parameters)
		if err != nil {
			raw = nil
		}
		out = append(out, function{name: d.Name, description: d.Description, params: parseSchema(raw)})
	}
	return out
}

// isGateway reports whether f has a gateway's inputs: an action offering
// list and execute, a tool name and tool inputs.
func (f function) isGateway() bool {
	action, ok := f.params.prop(gatewayAction)
	if !ok || !f.params.has(gatewayToolName) || !f.params.has(gatewayInputs) {
		return false
	}
	return slices.Contains(action.enum, any(actionList)) && slices.Contains(action.enum, any(actionExecute))
}

// schema is the part of a JSON Schema object the planner reads.
type schema struct {
	props    []property // in the schema's order
	required []string   // in the schema's order
}

// property is one property of a schema.
type property struct {
	name, description string
	typ, itemType     string // first non-null JSON type; "" when unknown
	enum              []any
	def               any
	min, max          *float64
}

func (s schema) prop(name string) (property, bool) {
	for _, p := range s.props {
		if p.name == name {
			return p, true
		}
	}
	return property{}, false
}

func (s schema) has(name string) bool {
	_, ok := s.prop(name)
	return ok
}

func (s schema) isRequired(name string) bool { return slices.Contains(s.required, name) }

// parseSchema reads a JSON Schema object, keeping the order of properties.
// Anything unreadable yields an empty schema.
func parseSchema(raw []byte) schema {
	var top struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return schema{}
	}
	s := schema{required: top.Required}
	for _, kv := range orderedObject(top.Properties) {
		s.props = append(s.props, parseProperty(kv.key, kv.value))
	}
	return s
}

func parseProperty(name string, raw json.RawMessage) property {
	var p struct {
		Description string          `json:"description"`
		Type        json.RawMessage `json:"type"`
		Items       struct {
			Type json.RawMessage `json:"type"`
		} `json:"items"`
		Enum    []any    `json:"enum"`
		Default any      `json:"default"`
		Minimum *float64 `json:"minimum"`
		Maximum *float64 `json:"maximum"`
	}
	_ = json.Unmarshal(raw, &p)
	return property{name: name, description: p.Description, typ: jsonType(p.Type),
		itemType: jsonType(p.Items.Type), enum: p.Enum, def: p.Default, min: p.Minimum, max: p.Maximum}
}

// jsonType returns a schema's type: the string, or the first non-null entry
// of a type list.
func jsonType(raw json.RawMessage) string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return one
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		for _, t := range many {
			if t != "null" {
				return t
			}
		}
	}
	return ""
}

type keyValue struct {
	key   string
	value json.RawMessage
}

// orderedObject returns the members of a JSON object in their order, or nil
// when raw is not an object.
func orderedObject(raw json.RawMessage) []keyValue {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var out []keyValue
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return out
		}
		out = append(out, keyValue{key, v})
	}
	return out
}

// listedTool is one tool a gateway listed into the environment.
type listedTool struct {
	name, description string
	inputs            schema
}

// listedTools returns the tools gateway listed, in list order, or nil when
// it has not listed.
func (d *decision) listedTools(gateway string) []listedTool {
	var out []listedTool
	seen := map[string]bool{}
	for _, entry := range d.Environment[gateway][listResult] {
		for _, obj := range entry.Objects {
			name, _ := obj["name"].(string)
			if name == "" || seen[name] {
				continue
			}
			seen[name] = true
			desc, _ := obj["description"].(string)
			raw, _ := json.Marshal(obj["inputs"])
			out = append(out, listedTool{name: name, description: desc, inputs: parseSchema(raw)})
		}
	}
	return out
}

// hasListed reports whether the environment shows tools that gateway
// listed. A listing the tree folded out of the prompt to keep it short
// (only its _REF_IDs are left) does not count: the planner lists again.
func (d *decision) hasListed(gateway string) bool {
	return len(d.listedTools(gateway)) > 0
}

// executes returns this run's execute tasks on gateway: how many succeeded
// and how many failed, and the last failed one.
func (d *decision) executes(gateway string) (ok, failed int, lastFailed *task) {
	for i := range d.TasksCompleted {
		t := &d.TasksCompleted[i]
		if t.Tool != gateway || t.Inputs[gatewayAction] != actionExecute {
			continue
		}
		if t.Error {
			failed++
			lastFailed = t
			continue
		}
		ok++
	}
	return ok, failed, lastFailed
}

// errorsFor returns this run's self-healing errors of gateway.
func (d *decision) errorsFor(gateway string) []prevError {
	var out []prevError
	for _, e := range d.PreviousErrors {
		if e.Tool == gateway {
			out = append(out, e)
		}
	}
	return out
}
