package mcpendpoint

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway"
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

// ask is the ask tool. A server's sampling request during the run goes to
// the client if it declared sampling, else to the service's model only
// where the server's "sampling" is "auto", else it is refused.
func (e *Endpoint) ask(ctx context.Context, user string, args map[string]any, emit tools.Emitter) (*mcp.CallToolResult, error) {
	q, _ := args["question"].(string)
	if q == "" || len(q) > maxQuestionBytes {
		return mcp.NewToolResultError(fmt.Sprintf(`ask needs "question", at most %d bytes`, maxQuestionBytes)), nil
	}
	conv, _ := args["conversation_id"].(string)
	if err := checkConversationID(conv); err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	// The tree's calls are made for this client: a server's sampling
	// request goes to it if it declared sampling, else to the service's
	// model only where the server's "sampling" is "auto"; the completion
	// of a url-mode question it got reaches it.
	cs, _ := emit.(mcpgateway.ClientSampler)
	ctx = mcpgateway.WithCallerSampling(ctx, cs)
	if ec, ok := emit.(mcpgateway.ElicitationCompleter); ok {
		ctx = mcpgateway.WithElicitationCompleter(ctx, ec)
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

// maxConversationIDBytes bounds ask's conversation_id, as web bounds ids.
const maxConversationIDBytes = 256

// checkConversationID refuses what web refuses in an id: more than 256
// bytes, invalid UTF-8, control characters, "/", "." or ".." (no path
// could reach the conversation at /tree/<user>/<conversation>: clients
// resolve dot segments before they send a path).
func checkConversationID(id string) error {
	switch {
	case len(id) > maxConversationIDBytes:
		return fmt.Errorf("conversation_id is too long (%d bytes, limit %d)", len(id), maxConversationIDBytes)
	case !utf8.ValidString(id):
		return errors.New("conversation_id is not valid UTF-8")
	case strings.ContainsFunc(id, unicode.IsControl) || strings.ContainsRune(id, '/'):
		return errors.New(`conversation_id must not hold control characters or "/"`)
	case id == "." || id == "..":
		return fmt.Errorf("conversation_id %q names no conversation a path can reach: choose another", id)
	}
	return nil
}
