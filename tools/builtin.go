package tools

import (
	"context"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Names of the built-in tools. They are reserved in every tree: a gateway that
// takes one of them replaces the built-in with a warning (DESIGN.md).
const (
	TextResponseName   = "text_response"
	CitedSummarizeName = "cited_summarize"
)

// textInput is the one input of both built-ins: the decision model writes the
// answer itself, so the answer costs no second model call.
func textInput(desc string) []Input {
	return []Input{{Name: "text", Type: "string", Required: true, Description: desc}}
}

// TextResponse returns the text_response tool: it ends the run with an answer
// the decision model writes as its "text" input. Run emits that text as one
// text event and adds nothing to the environment.
//
// The returned tool is stateless and safe for concurrent use.
func TextResponse() Tool { return textResponse{} }

type textResponse struct{}

var _ Tool = textResponse{}

func (textResponse) Name() string { return TextResponseName }

func (textResponse) Description() string {
	return "End the conversation by replying to the user. Use this when the user's prompt " +
		"has been answered, when you have nothing more to do but reply, or for conversational " +
		"prompts that no other tool covers. Do not use it as a source of information: facts " +
		"must come from the environment, so call the other tools first when the user asks " +
		"for something they can find or do. If a task could not be completed, use this to " +
		"say briefly why."
}

func (textResponse) Inputs() []Input {
	return textInput("The full answer to the user, in markdown, written in a helpful " +
		"and concise tone. Base it on the environment and the tasks completed.")
}

func (textResponse) EndsRun() bool { return true }

func (textResponse) StatusLine(map[string]any) string { return "Writing a response..." }

// Run emits the text argument as the answer.
func (textResponse) Run(ctx context.Context, call Call, emit Emitter) (Result, error) {
	text, _ := call.Args["text"].(string)
	if strings.TrimSpace(text) == "" {
		return ErrorResult("text_response needs a non-empty text input",
			`call text_response with {"text": "<your answer to the user>"}`), nil
	}
	emit.Emit(NewText(text))
	return Result{Name: TextResponseName, LLMText: "answered the user"}, nil
}

// CitedSummarize returns the cited_summarize tool: it ends the run with an
// answer that cites the environment's objects by their _REF_ID in square
// brackets ("[mcp_todo_list_0_0]"). It is available only once the
// environment holds results. Run checks that every cited id exists (unknown
// ids come back as a self-healing error Result) and emits one text event
// whose object carries "text" and "ref_ids".
//
// The returned tool is stateless and safe for concurrent use.
func CitedSummarize() Tool { return citedSummarize{} }

type citedSummarize struct{}

var (
	_ Tool         = citedSummarize{}
	_ Availability = citedSummarize{}
)

func (citedSummarize) Name() string { return CitedSummarizeName }

func (citedSummarize) Description() string {
	return "End the conversation by summarising the information retrieved so far, citing " +
		"the objects it comes from. Use this when the environment holds the results the user " +
		"asked about and the answer should be grounded in them. Cite each object you use by " +
		"its _REF_ID in square brackets, e.g. [mcp_todo_list_0_0], right after the sentence " +
		"that uses it. Cite only ids that appear in the environment."
}

func (citedSummarize) Inputs() []Input {
	return textInput("The answer to the user, in markdown, summarising the relevant " +
		"results and citing each object used by its _REF_ID in square brackets.")
}

func (citedSummarize) EndsRun() bool { return true }

func (citedSummarize) StatusLine(map[string]any) string { return "Summarising the results..." }

// Available reports false with a reason while env holds no result.
func (citedSummarize) Available(env *Environment) (bool, string) {
	if env == nil || env.Empty() {
		return false, "no results in the environment yet"
	}
	return true, ""
}

// citation matches a bracketed _REF_ID: <tool>_<name>_<n>_<i>.
var citation = regexp.MustCompile(`\[([A-Za-z0-9_.\-]+_[0-9]+_[0-9]+)\]`)

// Run checks the citations and emits the answer with the cited ids.
func (citedSummarize) Run(ctx context.Context, call Call, emit Emitter) (Result, error) {
	text, _ := call.Args["text"].(string)
	if strings.TrimSpace(text) == "" {
		return ErrorResult("cited_summarize needs a non-empty text input",
			`call cited_summarize with {"text": "<answer citing [_REF_ID]s>"}`), nil
	}
	known := refIDs(call.Env)
	var cited, unknown []string
	for _, m := range citation.FindAllStringSubmatch(text, -1) {
		id := m[1]
		if slices.Contains(cited, id) || slices.Contains(unknown, id) {
			continue
		}
		if _, ok := known[id]; ok {
			cited = append(cited, id)
		} else {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		return ErrorResult("cited_summarize cites unknown _REF_IDs: "+strings.Join(unknown, ", "),
			"cite only ids present in the environment: "+knownList(known)), nil
	}
	if cited == nil {
		cited = []string{}
	}
	emit.Emit(Event{Type: EventText, Payload: TextPayload{
		Type:     "text_with_citations",
		Metadata: map[string]any{},
		Objects:  []map[string]any{{"text": text, "ref_ids": cited}},
	}})
	return Result{Name: CitedSummarizeName, LLMText: "answered the user with citations"}, nil
}

// refIDs collects every _REF_ID in env.
func refIDs(env *Environment) map[string]struct{} {
	ids := map[string]struct{}{}
	if env == nil {
		return ids
	}
	for _, byName := range env.Snapshot() {
		for _, entries := range byName {
			for _, e := range entries {
				for _, obj := range e.Objects {
					if id, ok := obj[RefIDKey].(string); ok {
						ids[id] = struct{}{}
					}
				}
			}
		}
	}
	return ids
}

// knownList names up to 20 known ids, sorted, for the model's feedback.
func knownList(known map[string]struct{}) string {
	if len(known) == 0 {
		return "(none)"
	}
	ids := make([]string, 0, len(known))
	for id := range known {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	if len(ids) > 20 {
		return strings.Join(ids[:20], ", ") + ", ..."
	}
	return strings.Join(ids, ", ")
}
