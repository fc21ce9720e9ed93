package web

import (
	"context"
	"encoding/json"
	"time"
)

// Store is what web reads and writes in the database beside the trees'
// conversations (which tree.Manager saves itself). persist satisfies it.
// Safe for concurrent use.
type Store interface {
	// EnsureUser creates the user when it does not exist and reports
	// whether it did.
	EnsureUser(ctx context.Context, userID string) (existed bool, err error)
	// Events returns a conversation's saved event log, oldest first, each
	// envelope as it was sent; a conversation never saved has an empty
	// log. The slice is the caller's.
	Events(ctx context.Context, userID, conversationID string) ([]json.RawMessage, error)
}

// Servers exposes the configured MCP servers and their gateways' two
// actions. Safe for concurrent use. cmd satisfies it over the gateways, so
// that web never imports mcpgateway.
//
// name is a server's name or its gateway tool's name (mcp_<server>). An
// unknown server is an error matching tree.ErrNotFound (a gateway is a tool
// of the tree). Errors that are not matched by one of tree's sentinels,
// [ErrUnavailable], tools.ErrInvalidArguments or tools.ErrUnknownTool are
// server failures (502).
//
// The text of every error is shown to the client, also on a 502, 503 or
// 504, so it must name the server and say what failed, with the server's
// secrets masked (what the model is told). An error that also has a method
// RetryAt() time.Time (found with errors.As; a server whose circuit is
// open) gets that time in the answer, and a Retry-After header.
type Servers interface {
	// Servers returns a snapshot of every configured server, secrets masked.
	Servers(ctx context.Context) (ServersStatus, error)
	// List returns one page of the server's tools that q selects (best
	// matches first when q.Query is set). A cursor no page gave is an
	// error matching tools.ErrInvalidArguments.
	List(ctx context.Context, name string, q ListRequest) (ToolPage, error)
	// Execute runs the gateway's execute action with one of the server's
	// tools. inputs were decoded with json.Decoder.UseNumber (numbers are
	// json.Number) and are owned by the callee. Inputs that break the tool's
	// schema are a *tools.ArgumentError; an unknown tool matches
	// tools.ErrUnknownTool. An MCP result with isError set is a result, not
	// an error.
	Execute(ctx context.Context, name, tool string, inputs map[string]any) (ExecuteResult, error)
}

// ListRequest is the optional body of POST /api/servers/:name/list.
type ListRequest struct {
	// Query holds words to find tools by name or description; "" lists
	// every tool.
	Query string `json:"query"`
	// Cursor is a previous page's next_cursor; "" starts at the first page.
	Cursor string `json:"cursor"`
}

// UserServers is an optional capability of a Servers: the servers' status
// as one user sees it (a server that keeps a session per user is
// "needs_sign_in" for a user without a token). /api/servers and the event
// streams use it when the Servers has it.
type UserServers interface {
	// ServersFor is Servers for user.
	ServersFor(ctx context.Context, user string) (ServersStatus, error)
}

// FeedbackStore keeps users' ratings of answers. persist satisfies it.
// Safe for concurrent use.
type FeedbackStore interface {
	// AddFeedback records a rating (0 negative, 1 positive, 2
	// superpositive) of a query's answer, replacing an earlier one.
	AddFeedback(ctx context.Context, userID, conversationID, queryID string, rating int) error
	// RemoveFeedback deletes a query's rating; a missing one is an error
	// matching tree.ErrNotFound.
	RemoveFeedback(ctx context.Context, userID, conversationID, queryID string) error
	// EachFeedback calls fn with every rating the user gave and when,
	// oldest first.
	EachFeedback(ctx context.Context, userID string, fn func(rating int, at time.Time)) error
}

// TextModel completes a prompt with the model that makes the tree's
// decisions, for the follow-up suggestions. cmd satisfies it with the
// configured llms.Model. Safe for concurrent use.
type TextModel interface {
	// Complete returns the model's answer to prompt.
	Complete(ctx context.Context, prompt string) (string, error)
}
