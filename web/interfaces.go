package web

import (
	"context"
	"encoding/json"

	"github.com/elysia-go/elysia/tools"
)

// Trees reads and changes users' decision trees. cmd satisfies it with an
// adapter over the tree package.
//
// Every method is called concurrently from many requests and must be safe
// for concurrent use. The returned JSON is Elysia's tree JSON (DESIGN.md,
// "The tree") and is owned by the caller; web never modifies it.
type Trees interface {
	// TreeJSON returns the tree of a conversation, creating the user and the
	// conversation with the default tree when they do not exist.
	TreeJSON(ctx context.Context, userID, conversationID string) (json.RawMessage, error)
	// InitTree (re)creates a conversation's tree with an initialisation mode
	// ("one_branch", "multi_branch" or "empty"; "" means the default) and
	// returns it. An unknown mode is an error matching ErrInvalidInput.
	InitTree(ctx context.Context, userID, conversationID, mode string) (json.RawMessage, error)
	// ApplyOp applies one tree operation for a user and returns the
	// resulting tree (of op.ConversationID, or of the user's default tree
	// when op.ConversationID is empty). Unknown tools or branches are errors
	// matching ErrNotFound or tools.ErrUnknownTool; an operation that
	// cannot apply (a duplicate id, removing the root) matches
	// ErrInvalidInput.
	ApplyOp(ctx context.Context, userID string, op TreeOp) (json.RawMessage, error)
}

// TreeOpKind names a tree operation; it is the last element of the
// /tools/:user_id/<kind> path.
type TreeOpKind string

// Tree operations, as in Elysia's /tools routes.
const (
	OpAddTool      TreeOpKind = "add"
	OpRemoveTool   TreeOpKind = "remove"
	OpAddBranch    TreeOpKind = "add_branch"
	OpRemoveBranch TreeOpKind = "remove_branch"
)

// TreeOp is one change to a user's trees, decoded from the body of
// POST /tools/:user_id/<kind>.
//
// As in Elysia, an operation without a conversation id applies to every
// conversation of the user and to the user's default for conversations
// created later; with ConversationID set it applies to that conversation
// only (creating it first if needed).
type TreeOp struct {
	Kind TreeOpKind `json:"-"`
	// ConversationID limits the operation to one conversation; "" means all
	// of the user's conversations and the default for new ones.
	ConversationID string `json:"conversation_id"`
	// ToolName is the tool to add or remove (add, remove).
	ToolName string `json:"tool_name"`
	// BranchID is the decision node the tool goes on or comes off (add,
	// remove); for add_branch and remove_branch it is the branch's own id
	// when ID is empty. "" means the root.
	BranchID string `json:"branch_id"`
	// FromToolIDs chains the tool after these tools (add, remove,
	// add_branch). Nil means none.
	FromToolIDs []string `json:"from_tool_ids"`
	// ID is the id of the branch to add or remove (add_branch,
	// remove_branch); Elysia's field name.
	ID string `json:"id"`
	// Instruction and Description describe a new branch (add_branch).
	Instruction string `json:"instruction"`
	Description string `json:"description"`
	// Root makes a new branch the tree's root (add_branch).
	Root bool `json:"root"`
	// FromBranchID is the node under which a new branch goes (add_branch);
	// "" means the root.
	FromBranchID string `json:"from_branch_id"`
	// Status is the status line shown while the branch is chosen
	// (add_branch); "" means none.
	Status string `json:"status"`
}

// Catalog lists the tools that can be added to a tree. Safe for concurrent
// use.
type Catalog interface {
	// AvailableTools returns every known tool keyed by name, each as
	// {"name", "description", "inputs", "end"} (DESIGN.md, appendix). The
	// value must marshal to a JSON object.
	AvailableTools(ctx context.Context) (any, error)
}

// Runner runs users' queries through the decision loop. Safe for concurrent
// use by any number of requests.
type Runner interface {
	// RunQuery runs one query of a conversation and returns when the run has
	// ended. It calls emit with each event's envelope, in order, and emit
	// may be called from any goroutine, though not concurrently; emit does not
	// block for long and drops envelopes once ctx is done. ctx ends when the
	// client goes away, and the run must then stop promptly.
	//
	// When another query of the conversation is running and does not end
	// in time, RunQuery returns an error matching ErrBusy, preferably before
	// emitting anything. An error returned after envelopes were emitted is
	// sent to the client as an error event, unless the run already emitted
	// one.
	RunQuery(ctx context.Context, userID, conversationID, queryID, query string, emit func(tools.Envelope)) error
}

// Conversations lists, reopens and deletes saved conversations. Safe for
// concurrent use.
type Conversations interface {
	// List returns the user's conversations, most recent first, each as
	// {"conversation_id", "title", "updated_at"}; it must marshal to a JSON
	// array. A user without conversations gets an empty list, not an error.
	List(ctx context.Context, userID string) (any, error)
	// Get returns one conversation with its history and event log, to
	// reopen it in the UI; it must marshal to a JSON object. A missing
	// conversation is an error matching ErrNotFound.
	Get(ctx context.Context, userID, conversationID string) (any, error)
	// Delete removes a conversation and everything saved with it. A
	// missing conversation is an error matching ErrNotFound.
	Delete(ctx context.Context, userID, conversationID string) error
}

// Users initialises users (Elysia's POST /init/user). Safe for concurrent
// use.
type Users interface {
	// InitUser creates the user if needed and reports whether it existed
	// before, with the user's config (any value that marshals to a JSON
	// object).
	InitUser(ctx context.Context, userID string) (existed bool, config any, err error)
}

// Servers exposes the configured MCP servers and their gateways' two
// actions. Safe for concurrent use.
//
// name is a server's name or its gateway tool's name (mcp_<server>). An
// unknown server is an error matching ErrNotFound. Errors that are not
// matched by one of the package's sentinels, tools.ErrInvalidArguments or
// tools.ErrUnknownTool are server failures (502).
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
	// error matching ErrInvalidInput.
	List(ctx context.Context, name string, q ListRequest) (any, error)
	// Execute runs the gateway's execute action with one of the server's
	// tools. inputs were decoded with json.Decoder.UseNumber (numbers are
	// json.Number) and are owned by the callee. Inputs that break the tool's
	// schema are a *tools.ArgumentError; an unknown tool matches
	// tools.ErrUnknownTool. An MCP result with isError set is a result, not
	// an error.
	Execute(ctx context.Context, name, tool string, inputs map[string]any) (any, error)
}

// ListRequest is the optional body of POST /api/servers/:name/list.
type ListRequest struct {
	// Query holds words to find tools by name or description; "" lists
	// every tool.
	Query string `json:"query"`
	// Cursor is a previous page's next_cursor; "" starts at the first page.
	Cursor string `json:"cursor"`
}

// ServersStatus is the body of GET /api/servers, less its "error" field.
type ServersStatus struct {
	// ConfigFile is the path of the mcp.json in use.
	ConfigFile string `json:"config_file"`
	// ConfigError is the last reload's error, "" when the file is valid.
	ConfigError string `json:"config_error"`
	// Servers is one entry per configured server, in file order; it must
	// marshal to a JSON array. Nil is sent as [].
	Servers any `json:"servers"`
}
