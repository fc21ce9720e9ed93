package mcpendpoint

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/tools"
)

// maxQuestionBytes bounds ask's question.
const maxQuestionBytes = 64 << 10

// Agent answers the ask tool: it runs the decision tree for user on
// question, in conversation conversationID ("" for a new one), sending its
// status lines to emit, and saves the conversation as any other. It is
// safe for concurrent use; a cancelled ctx ends the run.
type Agent interface {
	Ask(ctx context.Context, user, conversationID, question string, emit tools.Emitter) (Answer, error)
}

// Answer is what the agent answered.
type Answer struct {
	// ConversationID is the conversation the run was saved in.
	ConversationID string `json:"conversation_id"`
	// Text is the agent's answer.
	Text string `json:"text"`
	// Objects are the result objects the run displayed.
	Objects []map[string]any `json:"objects,omitempty"`
}

// ask is the ask tool.
func (e *Endpoint) ask(ctx context.Context, user string, args map[string]any, emit tools.Emitter) (*mcp.CallToolResult, error) {
	q, _ := args["question"].(string)
	if q == "" || len(q) > maxQuestionBytes {
		return mcp.NewToolResultError(fmt.Sprintf(`ask needs "question", at most %d bytes`, maxQuestionBytes)), nil
	}
	conv, _ := args["conversation_id"].(string)
	if emit == nil {
		emit = tools.Discard
	}
	ans, err := e.opts.Agent.Ask(ctx, user, conv, q, emit)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return mcp.NewToolResultError("ask: " + err.Error()), nil
	}
	text := ans.Text
	if text == "" {
		text = "(no answer)"
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(text)},
		StructuredContent: ans,
	}, nil
}
