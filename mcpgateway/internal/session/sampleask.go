package session

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/tools"
)

// Caps of what a sampling request shows the user (a question or a status
// line, both kept in the conversation's history): each text, and all of
// them together. What is cut is marked, and the payload says so.
const (
	maxShownSampleText  = 8 << 10
	maxShownSampleTotal = 32 << 10
)

// maxEditedReply bounds the reply a user writes in place of the model's.
const maxEditedReply = 64 << 10

// refuseSampling logs a refused sampling request and returns the error the
// server gets.
func (c *Conn) refuseSampling(ctx context.Context, reason string) error {
	c.logger.WarnContext(ctx, "sampling refused", "reason", reason)
	return fmt.Errorf("%w: %s", ErrSamplingRefused, reason)
}

// sampleShown is sr as the user sees it: masked, each text capped.
func (c *Conn) sampleShown(sr SampleRequest, tool string) tools.SamplingPayload {
	p := tools.SamplingPayload{SamplingID: "smp-" + tools.NewID(), Server: c.cfg.Name, Tool: tool, MaxTokens: sr.MaxTokens,
		Messages: make([]tools.SamplingMessage, 0, len(sr.Messages))}
	total := &Budget{Left: maxShownSampleTotal}
	show := func(s string) string {
		s, cut := c.shownText(s, false)
		s, cutTotal := total.Take(s)
		p.Truncated = p.Truncated || cut || cutTotal
		return s
	}
	p.SystemPrompt = show(sr.SystemPrompt)
	for _, m := range sr.Messages {
		p.Messages = append(p.Messages, tools.SamplingMessage{Role: m.Role, Text: show(m.Text)})
	}
	return p
}

// shownText is s masked and capped at maxShownSampleText, and whether it
// (or anything before, per cut) was cut. Masking comes first: a secret cut
// in two no longer matches the mask.
func (c *Conn) shownText(s string, cut bool) (string, bool) {
	out, more := (&Budget{Left: maxShownSampleText}).Take(c.mask(s))
	return out, cut || more
}

// ask serves a request of a server with "sampling": "ask": the call's user
// approves the request before the model is asked and its reply before it
// goes back, and may edit the reply. A denial at either stage is
// ErrSamplingDeclined for the server; with no interactive user, or no
// answer within elicitation_timeout, the request is refused.
func (h sampling) ask(ctx context.Context, ac *activeCall, sr SampleRequest, show tools.SamplingPayload) (*mcp.CreateMessageResult, error) {
	c := h.c
	asker, ok := ac.emit.(tools.Asker)
	if !ok {
		return nil, c.refuseSampling(ctx, `no interactive user to approve it ("sampling": "ask"; "auto" answers unattended)`)
	}
	show.Stage = tools.SamplingRequest
	if _, err := h.approve(ctx, ac, asker, show, nil); err != nil {
		return nil, err
	}
	res, err := h.sample(ctx, ac, sr)
	if err != nil {
		return nil, err
	}
	show.Stage, show.Model = tools.SamplingReply, truncate(res.Model, 100)
	show.Reply, show.Truncated = c.shownText(res.Text, show.Truncated)
	ans, err := h.approve(ctx, ac, asker, show, checkEditedReply)
	if err != nil {
		return nil, err
	}
	if edited, ok := ans.Content["reply"].(string); ok {
		res.Text = edited
	}
	return createResult(res), nil
}

// approve asks the user to approve show and returns the answer, or the
// error the server gets: ErrSamplingDeclined when the user denies,
// ErrSamplingRefused when no one answered.
func (h sampling) approve(ctx context.Context, ac *activeCall, asker tools.Asker, show tools.SamplingPayload,
	check func(map[string]any) (map[string]any, error),
) (tools.Answer, error) {
	c := h.c
	msg := fmt.Sprintf("%s asks the model to write a message for %s", c.cfg.Name, ac.tool)
	if show.Stage == tools.SamplingReply {
		msg = fmt.Sprintf("The model's reply to %s, before it goes back", c.cfg.Name)
	}
	_, wait := c.cfg.Limits()
	actx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	// The user's reading time is not the server's: call_timeout waits.
	defer ac.clock.hold()()
	ans, err := asker.Ask(actx, tools.Question{Payload: tools.ElicitationPayload{
		Server: c.cfg.Name, Tool: ac.tool, Mode: tools.ElicitSampling, Message: msg, Sampling: &show}, Check: check})
	switch {
	case err != nil && actx.Err() != nil && ctx.Err() == nil:
		return ans, c.refuseSampling(ctx, fmt.Sprintf("no answer within elicitation_timeout %v", wait))
	case err != nil:
		return ans, err
	case ans.Reason != "":
		return ans, c.refuseSampling(ctx, ans.Reason)
	case ans.Action != tools.ElicitAccept:
		c.logger.InfoContext(ctx, "sampling declined by the user", "stage", show.Stage, "tool", ac.tool)
		return ans, ErrSamplingDeclined
	}
	return ans, nil
}

// checkEditedReply checks an approval of a reply: its content is empty
// (the model's reply goes back) or {"reply": text}, the user's edit.
func checkEditedReply(content map[string]any) (map[string]any, error) {
	v, ok := content["reply"]
	if !ok {
		return map[string]any{}, nil
	}
	s, ok := v.(string)
	switch {
	case !ok:
		return nil, &tools.ArgumentError{Tool: "the reply", Problems: []string{"/reply must be a string"}}
	case len(s) > maxEditedReply:
		return nil, &tools.ArgumentError{Tool: "the reply", Problems: []string{"/reply is over " + byteSize(maxEditedReply)}}
	}
	return map[string]any{"reply": s}, nil
}
