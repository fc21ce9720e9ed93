package tools

import (
	"context"
)

// Tool is one option of a decision node that does work: a built-in such as
// text_response, or an MCP gateway.
//
// Name, Description, Inputs and EndsRun describe the tool to the decision
// model; they must be cheap, must not block, and may be called from many
// goroutines at once. Description may change over the tool's life (a gateway
// appends the names of the tools it has listed).
//
// Run executes the tool once. It must be safe for concurrent use: one tool
// value is shared by every tree, conversation and user. Failures the model can
// act on (bad inputs, an unknown tool, an unavailable server, an MCP isError
// result) are returned as a Result with IsError set, never as an error. A
// non-nil error means the run cannot go on (the context was cancelled, a bug)
// and ends the query. Run must return promptly once ctx is done.
type Tool interface {
	Name() string
	Description() string
	Inputs() []Input
	EndsRun() bool
	Run(ctx context.Context, call Call, emit Emitter) (Result, error)
}

// Availability is implemented by tools that can be temporarily unavailable
// (cited_summarize without results, a gateway whose circuit is open). The tree
// lists an unavailable tool to the model with the reason, and never runs it.
// Available must be cheap and safe for concurrent use.
type Availability interface {
	Available(env *Environment) (ok bool, reason string)
}

// AutoRunner is implemented by tools that the tree runs without asking the
// model, before a decision at the node that holds them, whenever AutoRun
// returns true. Inputs passed to Run are the tool's defaults.
type AutoRunner interface {
	AutoRun(env *Environment) bool
}

// StatusLiner is implemented by tools that describe what they are about to do
// in a one-line status for the user ("Listing tools of todo..."). The tree
// emits it as a status event before Run.
type StatusLiner interface {
	StatusLine(args map[string]any) string
}

// Input describes one named input of a tool. A tool's inputs are ordered; the
// order is the order the model and the UI show them in.
type Input struct {
	// Name is the input's key in the arguments map.
	Name string `json:"name"`
	// Description tells the model what the input is for.
	Description string `json:"description"`
	// Type is a JSON Schema type: "string", "integer", "number", "boolean",
	// "object" or "array".
	Type string `json:"type"`
	// Default is used when the model leaves the input out. Nil means none.
	Default any `json:"default,omitempty"`
	// Required inputs must be given by the model.
	Required bool `json:"required"`
	// Enum, when not empty, lists the only values allowed.
	Enum []string `json:"enum,omitempty"`
}

// Call is what a tool receives when it runs.
type Call struct {
	// Args are the inputs chosen by the model, with defaults filled in for
	// inputs it left out. Numbers are json.Number when they came from JSON.
	Args map[string]any
	// Query is the user's prompt for this run.
	Query string
	// Env is the environment so far. Tools must treat it as read-only.
	Env *Environment
	// RequestID identifies the run in logs; it may be empty.
	RequestID string
	// UserID and ConversationID identify who the run is for; they may be empty.
	UserID         string
	ConversationID string
}

// Emitter receives the events a tool produces while it runs. Emit must not
// block for long: an implementation bounds its own wait by the lifetime of
// whatever it delivers to (a stream's request, a run), which is why Emit
// takes no ctx. Implementations are safe for concurrent use.
type Emitter interface {
	Emit(ev Event)
}

// EmitterFunc adapts a function to [Emitter].
type EmitterFunc func(ev Event)

// Emit calls f(ev).
func (f EmitterFunc) Emit(ev Event) { f(ev) }

// Discard is an Emitter that drops every event.
var Discard Emitter = EmitterFunc(func(Event) {})
