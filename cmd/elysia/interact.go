package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"
	"golang.org/x/term"

	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/tools"
)

// modelSampler answers MCP servers' sampling requests with the service's
// model (the offline planner answers deterministically).
type modelSampler struct {
	model llms.Model
	name  string // the model's name, as the server is told
}

var _ mcpgateway.Sampler = modelSampler{}

// Sample asks the model for one message.
func (m modelSampler) Sample(ctx context.Context, req mcpgateway.SampleRequest) (mcpgateway.SampleResult, error) {
	var msgs []llms.MessageContent
	if req.SystemPrompt != "" {
		msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeSystem, req.SystemPrompt))
	}
	for _, msg := range req.Messages {
		role := llms.ChatMessageTypeHuman
		if msg.Role == "assistant" {
			role = llms.ChatMessageTypeAI
		}
		msgs = append(msgs, llms.TextParts(role, msg.Text))
	}
	opts := []llms.CallOption{llms.WithMaxTokens(req.MaxTokens)}
	if req.Temperature > 0 {
		opts = append(opts, llms.WithTemperature(req.Temperature))
	}
	if len(req.StopSequences) > 0 {
		opts = append(opts, llms.WithStopWords(req.StopSequences))
	}
	resp, err := m.model.GenerateContent(ctx, msgs, opts...)
	if err != nil {
		return mcpgateway.SampleResult{}, err
	}
	if len(resp.Choices) == 0 {
		return mcpgateway.SampleResult{}, errors.New("the model gave no answer")
	}
	c := resp.Choices[0]
	stop := "endTurn"
	if c.StopReason == "length" || c.StopReason == "max_tokens" {
		stop = "maxTokens"
	}
	return mcpgateway.SampleResult{Text: c.Content, Model: m.name, StopReason: stop}, nil
}

// elicitationEnv chooses how a command without a terminal answers a
// server's question: "accept-defaults" accepts with the form's defaults,
// anything else declines.
const elicitationEnv = "ELYSIA_ELICITATION"

// terminalAsker answers a server's questions for a terminal user: on the
// terminal when one is attached (one line per field, Enter takes the
// default), else as ELYSIA_ELICITATION says.
type terminalAsker struct {
	in          *bufio.Reader
	out         io.Writer
	interactive bool
	policy      string

	// mu guards pending: the line being read, when a wait for it was
	// given up (Ctrl-C, elicitation_timeout); the next read takes it.
	mu      sync.Mutex
	pending chan string
}

func newTerminalAsker(out io.Writer) *terminalAsker {
	return &terminalAsker{in: bufio.NewReader(os.Stdin), out: out, interactive: term.IsTerminal(int(os.Stdin.Fd())), policy: os.Getenv(elicitationEnv)}
}

// answer asks q and returns the user's answer; check, when set, is applied
// to an accepted answer, and a failed check asks again (three tries). The
// error is ctx's, when it ends while the user is asked.
func (a *terminalAsker) answer(ctx context.Context, q tools.ElicitationPayload, check func(map[string]any) (map[string]any, error)) (tools.Answer, error) {
	if q.Mode == tools.ElicitSampling {
		return a.approveSampling(ctx, q)
	}
	// The question, its URL and its form are the server's: printed without
	// their controls.
	_, _ = fmt.Fprintf(a.out, "\n? %s asks: %s\n", termLine(q.Server), termText(q.Message))
	if !a.interactive {
		ans := a.unattended(check)
		// Say what became of the question: the server may only report
		// "declined".
		if ans.Reason != "" {
			_, _ = fmt.Fprintf(a.out, "  declined: %s\n", termLine(ans.Reason))
		} else {
			_, _ = fmt.Fprintf(a.out, "  accepted with the defaults (%s=%s)\n", elicitationEnv, a.policy)
		}
		return ans, nil
	}
	if q.Mode == "url" {
		_, _ = fmt.Fprintf(a.out, "  open %s, then press Enter when done (or type d to decline): ", termLine(q.URL))
		line, err := a.readLine(ctx)
		switch {
		case err != nil:
			return tools.Answer{}, err
		case strings.EqualFold(line, "d"):
			return tools.Answer{Action: tools.ElicitDecline}, nil
		}
		return tools.Answer{Action: tools.ElicitAccept}, nil
	}
	for try := 0; try < 3; try++ {
		content, ok, reason, err := a.form(ctx, q)
		switch {
		case err != nil:
			return tools.Answer{}, err
		case !ok:
			return tools.Answer{Action: tools.ElicitDecline, Reason: reason}, nil
		case check == nil:
			return tools.Answer{Action: tools.ElicitAccept, Content: content}, nil
		}
		c, err := check(content)
		if err == nil {
			return tools.Answer{Action: tools.ElicitAccept, Content: c}, nil
		}
		_, _ = fmt.Fprintf(a.out, "  that does not fit the form: %s\n", termLine(err.Error()))
	}
	return tools.Answer{Action: tools.ElicitDecline, Reason: "no valid answer in three tries"}, nil
}

// unattended answers without a terminal, as ELYSIA_ELICITATION says.
func (a *terminalAsker) unattended(check func(map[string]any) (map[string]any, error)) tools.Answer {
	if a.policy != "accept-defaults" {
		return tools.Answer{Action: tools.ElicitDecline, Reason: "no terminal to ask on (set " + elicitationEnv + "=accept-defaults to accept the defaults)"}
	}
	content := map[string]any{}
	if check != nil {
		c, err := check(content)
		if err != nil {
			return tools.Answer{Action: tools.ElicitDecline, Reason: "the defaults do not answer the form: " + err.Error()}
		}
		content = c
	}
	return tools.Answer{Action: tools.ElicitAccept, Content: content}
}

// readLine reads the user's next line, or returns ctx's error when ctx
// ends first (Ctrl-C, elicitation_timeout). A read of stdin cannot be
// cancelled: the line it is waiting for goes to the next readLine, and
// its goroutine ends with that line (or EOF, or the process).
func (a *terminalAsker) readLine(ctx context.Context) (string, error) {
	a.mu.Lock()
	ch := a.pending
	if ch == nil {
		ch = make(chan string, 1)
		a.pending = ch
		go func() {
			line, _ := a.in.ReadString('\n') // EOF or an error: an empty answer
			ch <- line
		}()
	}
	a.mu.Unlock()
	select {
	case line := <-ch:
		a.mu.Lock()
		a.pending = nil
		a.mu.Unlock()
		return strings.TrimSpace(line), nil
	case <-ctx.Done():
		_, _ = fmt.Fprintln(a.out) // end the prompt's line
		return "", ctx.Err()
	}
}

// callEmitter is what `elysia mcp call` gives the gateway: progress and
// warnings as lines on stderr, questions to the terminal.
type callEmitter struct {
	stderr io.Writer
	asker  *terminalAsker
}

var _ tools.Asker = callEmitter{}

// Emit prints progress and warnings.
func (e callEmitter) Emit(ev tools.Event) {
	switch p := ev.Payload.(type) {
	case tools.ProgressPayload:
		_, _ = fmt.Fprintf(e.stderr, "… %s\n", termLine(p.Text))
	case tools.StatusPayload:
		_, _ = fmt.Fprintf(e.stderr, "… %s\n", termLine(p.Text))
	case tools.SamplingPayload:
		_, _ = fmt.Fprintf(e.stderr, "… %s\n", termLine(p.Text))
	}
}

// Ask answers a question on the terminal.
func (e callEmitter) Ask(ctx context.Context, q tools.Question) (tools.Answer, error) {
	return e.asker.answer(ctx, q.Payload, q.Check)
}

// answerQuestion answers an elicitation event of `elysia query`'s run on the
// terminal and hands the answer to the tree.
func answerQuestion(ctx context.Context, env tools.Envelope, a *terminalAsker, answer func(context.Context, string, string, tools.Answer) error) error {
	var q tools.ElicitationPayload
	if err := json.Unmarshal(env.Payload, &q); err != nil {
		return err
	}
	ans, err := a.answer(ctx, q, nil)
	for try := 0; ; try++ {
		if err != nil {
			return err
		}
		err = answer(ctx, env.UserID, q.ElicitationID, ans)
		var ae *tools.ArgumentError
		if err == nil || !errors.As(err, &ae) || try == 2 {
			return err
		}
		_, _ = fmt.Fprintf(a.out, "  that does not fit the form: %s\n", termLine(fmt.Sprint(ae.Feedback())))
		ans, err = a.answer(ctx, q, nil)
	}
}
