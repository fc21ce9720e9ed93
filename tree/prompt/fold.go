package prompt

import (
	"fmt"
	"maps"
	"strings"

	"github.com/elysia-go/elysia/tools"
)

// DefaultMaxBytes is the default budget of a decision's human message
// (tree's Options.MaxPromptBytes): 24 KiB
// of JSON, some 6k tokens, fits the context of small local models (8k
// tokens) with room for the system message, the functions and the answer.
const DefaultMaxBytes = 24 << 10

// The shares of the prompt budget that the parts of a decision context
// which grow with the conversation may take. They are small on purpose:
// what one query needs (the options, this query's results and tasks) gets
// the rest, and a long conversation's prompt stays near a new one's.
const (
	// recentTurns is how many of the latest turns (a query and its answer)
	// the prompt keeps whole, within historyDiv.
	recentTurns = 2
	// historyDiv: the recent turns take at most budget/historyDiv bytes;
	// the newest turn is kept even when larger, its messages cut to that.
	historyDiv = 16
	// summaryDiv: the summary of the older turns takes at most
	// budget/summaryDiv bytes.
	summaryDiv = 64
	// oldEnvDiv: results of earlier queries take at most budget/oldEnvDiv
	// bytes of the environment; the rest of them are counted in notes.
	oldEnvDiv = 48
	// minPromptEnvironment is the least the environment is given when the
	// rest of the prompt already fills the budget.
	minPromptEnvironment = 1 << 10
	// summaryLine bounds each message quoted in the summary.
	summaryLine = 120
	// maxTasks and maxErrors bound tasks_completed and previous_errors;
	// older tasks fold into one entry, older errors are dropped.
	maxTasks  = 8
	maxErrors = 5
	// maxTaskText bounds a task's result and an error's message and
	// feedback; maxTaskInput bounds one input value of a task.
	maxTaskText  = 1 << 10
	maxTaskInput = 512
	// unboundedHistory is how many of the last messages a prompt without
	// a budget shows.
	unboundedHistory = 20
)

// Budget returns the byte budget of a decision's human message, given the
// setting maxBytes (zero: [DefaultMaxBytes]; negative: none), or -1 for
// none.
func Budget(maxBytes int) int {
	switch {
	case maxBytes == 0:
		return DefaultMaxBytes
	case maxBytes < 0:
		return -1
	}
	return maxBytes
}

// History is a conversation's history as the prompt shows it: a summary
// of the older turns and the recent ones whole.
type History struct {
	Summary string
	Recent  []Message
	Folded  int // messages summarised
}

// FoldHistory splits h, a conversation's whole history (read only), into
// the recent messages the prompt keeps whole and a deterministic digest of
// the others, within budget (negative: no bound, nothing folded). It reads
// only the end of h, so its cost does not grow with the conversation.
func FoldHistory(h []Message, budget int) History {
	if budget < 0 {
		return History{Recent: h[max(len(h)-unboundedHistory, 0):]}
	}
	share := budget / historyDiv
	// start is the first message kept whole: turns are taken from the end
	// while they fit, the newest always.
	start, size, turns := len(h), 0, 0
	for start > 0 && turns < recentTurns {
		i := start - 1
		if h[i].Role != "user" && i > 0 && h[i-1].Role == "user" {
			i-- // a query with its answer
		}
		n := 0
		for _, m := range h[i:start] {
			n += len(m.Content) + len(m.Role) + 24
		}
		if turns > 0 && size+n > share {
			break
		}
		start, size = i, size+n
		turns++
	}
	recent := make([]Message, 0, len(h)-start)
	for _, m := range h[start:] {
		if len(m.Content) > share {
			m.Content = cut(m.Content, share) + fmt.Sprintf(" (%d bytes cut)", len(m.Content)-share)
		}
		recent = append(recent, m)
	}
	return History{Summary: digest(h[:start], budget/summaryDiv), Recent: recent, Folded: start}
}

// digest is the summary of older messages: how many there are, the first
// query (what the conversation is about), then as many of the latest of
// them as fit in limit bytes, each on one line and cut. It reads at most
// the messages it quotes.
func digest(old []Message, limit int) string {
	if len(old) == 0 {
		return ""
	}
	head := fmt.Sprintf("%d earlier messages are folded into this summary (each quoted cut, oldest first):", len(old))
	first := "\n" + quote(old[0])
	used := len(head) + len(first)
	if used > limit {
		return cut(head+first, limit)
	}
	var lines []string
	for i := len(old) - 1; i > 0; i-- {
		l := "\n" + quote(old[i])
		if used+len(l)+len("\n…") > limit {
			break
		}
		used += len(l)
		lines = append(lines, l)
	}
	var b strings.Builder
	b.WriteString(head)
	b.WriteString(first)
	if len(lines) < len(old)-1 {
		b.WriteString("\n…")
	}
	for i := len(lines) - 1; i >= 0; i-- {
		b.WriteString(lines[i])
	}
	return b.String()
}

// quote is a message on one line, cut to summaryLine bytes.
func quote(m Message) string {
	return m.Role + ": " + cut(oneLine(m.Content), summaryLine)
}

// FoldTasks bounds tasks_completed: the last maxTasks tasks are kept, with
// long results and input values cut, and the earlier ones become one task
// that names them.
func FoldTasks(ts []Task) (out []Task, folded int) {
	if len(ts) > maxTasks {
		folded = len(ts) - maxTasks + 1
	}
	out = make([]Task, 0, len(ts)-folded+1)
	if folded > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "%d earlier tasks of this query, folded:", folded)
		for _, t := range ts[:folded] {
			status := "ok"
			if t.Error {
				status = "failed"
			}
			fmt.Fprintf(&b, " %s %v %s;", t.Tool, t.Inputs["action"], status)
		}
		out = append(out, Task{Tool: "earlier_tasks", Inputs: map[string]any{}, Result: cut(b.String(), maxTaskText)})
	}
	for _, t := range ts[folded:] {
		t.Result = cut(t.Result, maxTaskText)
		t.Inputs = capInputs(t.Inputs)
		out = append(out, t)
	}
	return out, folded
}

// capInputs returns in with every value whose JSON is over maxTaskInput
// bytes replaced by a note; in itself is not changed.
func capInputs(in map[string]any) map[string]any {
	var out map[string]any
	for k, v := range in {
		switch x := v.(type) {
		case nil, bool, float64, int:
			continue
		case string:
			if len(x) <= maxTaskInput {
				continue
			}
		}
		enc, err := tools.Marshal(v)
		if err == nil && len(enc) <= maxTaskInput {
			continue
		}
		if out == nil {
			out = maps.Clone(in)
		}
		out[k] = fmt.Sprintf("%s (%d bytes of JSON, cut)", cut(string(enc), maxTaskInput/2), len(enc))
	}
	if out == nil {
		return in
	}
	return out
}

// FoldErrors keeps the last maxErrors errors, their texts cut.
func FoldErrors(es []PreviousError) []PreviousError {
	if len(es) > maxErrors {
		es = es[len(es)-maxErrors:]
	}
	out := make([]PreviousError, len(es))
	for i, e := range es {
		out[i] = PreviousError{Tool: e.Tool, ErrorMessage: cut(e.ErrorMessage, maxTaskText), Feedback: cut(e.Feedback, maxTaskText)}
	}
	return out
}

// DigestEntry returns the short form the decision prompt gives a result of
// an earlier query (its first _REF_ID and a one-line digest: how many
// objects, their keys), as the JSON of a [tools.EnvEntry]. It is the form
// in which Stores keep a result once a later query makes it old; it is
// built without marshalling e's objects. When it is not shorter than e's
// JSON, the prompt shows e whole, and a Store should too.
func DigestEntry(e tools.EnvEntry) []byte { return digestEntry(e) }

// oneLine collapses whitespace so a quoted message stays on its line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
