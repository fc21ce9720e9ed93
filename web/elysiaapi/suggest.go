package elysiaapi

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/elysia-go/elysia/tree"
)

// maxSuggestions bounds the follow-up suggestions.
const maxSuggestions = 3

// suggestTimeout bounds the model's answer to a suggestion prompt.
const suggestTimeout = 30 * time.Second

// suggestions returns follow-up questions for a conversation: the model's
// (Deps.Model) when one is set and answers, else ones built from the
// conversation's last query and results and the tree's tools.
func (s *routes) suggestions(ctx context.Context, t *tree.Tree, st tree.ConversationState) []string {
	if s.k.TextModel() != nil {
		mctx, cancel := context.WithTimeout(ctx, suggestTimeout)
		answer, err := s.k.TextModel().Complete(mctx, suggestionPrompt(t, st))
		cancel()
		if err == nil {
			if out := parseSuggestions(answer); len(out) > 0 {
				return out
			}
		}
		s.k.Logger().WarnContext(ctx, "follow-up suggestions: the model gave none; suggesting from the tools", slog.Any("err", err))
	}
	return suggest(t, st)
}

// suggestionPrompt asks for follow-up questions, giving the last exchanges,
// the tools of the tree and which tools' results the conversation holds.
func suggestionPrompt(t *tree.Tree, st tree.ConversationState) string {
	var b strings.Builder
	b.WriteString("Suggest up to 3 short follow-up questions the user could ask next in this conversation. ")
	b.WriteString("Each must be answerable with the tools listed. Reply with one question per line and nothing else.\n\nConversation:\n")
	h := st.History
	if len(h) > 6 {
		h = h[len(h)-6:]
	}
	for _, m := range h {
		b.WriteString(m.Role + ": " + clip(m.Content, 500) + "\n")
	}
	b.WriteString("\nTools:\n")
	for _, id := range t.Root().OptionIDs() {
		b.WriteString("- " + id + "\n")
	}
	if used := resultTools(st); len(used) > 0 {
		b.WriteString("\nResults so far come from: " + strings.Join(used, ", ") + "\n")
	}
	return b.String()
}

// parseSuggestions reads one question a line, without list markers.
func parseSuggestions(answer string) []string {
	out := []string{}
	for line := range strings.SplitSeq(answer, "\n") {
		line = strings.TrimSpace(line)
		line = strings.TrimLeft(line, "-*•0123456789.) ")
		line = strings.Trim(strings.TrimSpace(line), `"`)
		if line == "" {
			continue
		}
		out = append(out, clip(line, 200))
		if len(out) == maxSuggestions {
			break
		}
	}
	return out
}

// resultTools lists, sorted, the tools whose results the conversation's
// environment holds.
func resultTools(st tree.ConversationState) []string {
	used := make([]string, 0, len(st.Environment))
	for tool := range st.Environment {
		used = append(used, tool)
	}
	sort.Strings(used)
	return used
}

// suggest proposes follow-ups without a model, deterministically: one about
// the last query's results when there are any, then one per tool of the
// tree's root (not the built-in answers), in the tree's order.
func suggest(t *tree.Tree, st tree.ConversationState) []string {
	out := []string{}
	last := ""
	for i := len(st.History) - 1; i >= 0; i-- {
		if st.History[i].Role == "user" {
			last = st.History[i].Content
			break
		}
	}
	if used := resultTools(st); last != "" && len(used) > 0 {
		out = append(out, "Show more detail on the results of \""+clip(last, 60)+"\" from "+strings.TrimPrefix(used[len(used)-1], "mcp_"))
	}
	for _, id := range t.Root().OptionIDs() {
		if len(out) >= maxSuggestions {
			break
		}
		if id == "text_response" || id == "cited_summarize" {
			continue
		}
		out = append(out, "What can the "+strings.TrimPrefix(id, "mcp_")+" tools do?")
	}
	return out
}

// clip cuts s to at most n runes, adding an ellipsis when cut.
func clip(s string, n int) string {
	r := []rune(strings.TrimSpace(s))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n]) + "…"
}
