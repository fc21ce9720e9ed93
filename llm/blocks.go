package llm

import (
	"context"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// blockMerger adapts a model that returns one choice per content block
// (langchaingo's anthropic client: the text block, then each tool_use
// block) to the contract the tree reads: one choice holding the update as
// Content and the tool calls. Other choices carry no alternatives to lose.
type blockMerger struct {
	llms.Model
}

// GenerateContent calls the wrapped model and merges its choices into one.
func (b blockMerger) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	resp, err := b.Model.GenerateContent(ctx, msgs, options...)
	if err != nil || resp == nil || len(resp.Choices) < 2 {
		return resp, err
	}
	merged := &llms.ContentChoice{GenerationInfo: map[string]any{}}
	var texts []string
	for _, c := range resp.Choices {
		if c == nil {
			continue
		}
		if c.Content != "" {
			texts = append(texts, c.Content)
		}
		merged.ToolCalls = append(merged.ToolCalls, c.ToolCalls...)
		if merged.FuncCall == nil {
			merged.FuncCall = c.FuncCall
		}
		if c.StopReason != "" {
			merged.StopReason = c.StopReason
		}
		merged.ReasoningContent += c.ReasoningContent
		for k, v := range c.GenerationInfo {
			merged.GenerationInfo[k] = v
		}
	}
	if merged.FuncCall == nil && len(merged.ToolCalls) > 0 {
		merged.FuncCall = merged.ToolCalls[0].FunctionCall
	}
	merged.Content = strings.Join(texts, "\n")
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{merged}}, nil
}

// Call sends a single prompt through the merging GenerateContent.
func (b blockMerger) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, b, prompt, options...)
}
