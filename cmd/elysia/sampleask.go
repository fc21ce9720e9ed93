package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/elysia-go/elysia/tools"
)

// approveSampling asks the terminal's user to approve a server's sampling
// request ("sampling": "ask"): the request before the model is asked, then
// the model's reply before it goes back (y sends it, e replaces it with a
// line the user types). Anything but y or e denies. Without a terminal it
// is refused: ELYSIA_ELICITATION answers forms, never the model's use.
func (a *terminalAsker) approveSampling(ctx context.Context, q tools.ElicitationPayload) (tools.Answer, error) {
	_, _ = fmt.Fprintf(a.out, "\n? %s\n", termLine(q.Message))
	if !a.interactive {
		reason := `no terminal to approve the sampling request on (set "sampling": "auto" for unattended use)`
		_, _ = fmt.Fprintf(a.out, "  refused: %s\n", reason)
		return tools.Answer{Action: tools.ElicitDecline, Reason: reason}, nil
	}
	s := q.Sampling
	if s == nil {
		s = &tools.SamplingPayload{}
	}
	// The request and the reply are the server's and the model's: printed
	// without their controls.
	if s.SystemPrompt != "" {
		_, _ = fmt.Fprintf(a.out, "  system prompt: %s\n", indent(termText(s.SystemPrompt)))
	}
	for _, m := range s.Messages {
		_, _ = fmt.Fprintf(a.out, "  %s: %s\n", termLine(m.Role), indent(termText(m.Text)))
	}
	_, _ = fmt.Fprintf(a.out, "  max tokens: %d\n", s.MaxTokens)
	if s.Truncated {
		_, _ = fmt.Fprintln(a.out, "  (long texts are cut here)")
	}
	prompt := "  Approve this request? [y/N] "
	if s.Stage == tools.SamplingReply {
		_, _ = fmt.Fprintf(a.out, "  reply of %s: %s\n", termLine(s.Model), indent(termText(s.Reply)))
		prompt = "  Send this reply? [y/N, e to edit] "
	}
	_, _ = fmt.Fprint(a.out, prompt)
	line, err := a.readLine(ctx)
	if err != nil {
		return tools.Answer{}, err
	}
	switch strings.ToLower(line) {
	case "y", "yes":
		return tools.Answer{Action: tools.ElicitAccept}, nil
	case "e", "edit":
		if s.Stage != tools.SamplingReply {
			break
		}
		_, _ = fmt.Fprint(a.out, "  your reply (one line): ")
		text, err := a.readLine(ctx)
		if err != nil {
			return tools.Answer{}, err
		}
		return tools.Answer{Action: tools.ElicitAccept, Content: map[string]any{"reply": text}}, nil
	}
	_, _ = fmt.Fprintln(a.out, "  denied")
	return tools.Answer{Action: tools.ElicitDecline}, nil
}

// indent puts the lines after the first of a shown text under it.
func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n    ") }
