package tools

import "encoding/json"

// Result is what one run of a tool gives back to the tree.
//
// A successful result's Objects are added to the environment under the tool's
// name and Result.Name, each tagged with a _REF_ID, and shown to the user as a
// result event of type Type. An error result (IsError) is fed back to the
// decision model as a self-healing error and shown as a self_healing_error
// event; it adds nothing to the environment.
type Result struct {
	// Name groups results within the tool's part of the environment: "list"
	// for a gateway's list, the MCP tool name for an execute. Empty means the
	// tool's own name.
	Name string
	// Type is the frontend payload type: "table", "document", "text", ...
	// Empty means "table".
	Type string
	// Objects are the result's records. Nil for tools that only emit events.
	Objects []map[string]any
	// ObjectsJSON, when not nil, holds each object's JSON as Marshal writes
	// it, one per object: a tool that keeps its objects encoded (a
	// gateway's cached tool list) spares the environment encoding them
	// again. The tool must keep the two in step.
	ObjectsJSON []json.RawMessage
	// Metadata describes the result ({"server": "todo", "action": "list"}).
	Metadata map[string]any
	// LLMText, when set, is what the decision model sees instead of the
	// objects marshalled as JSON. It is already capped by the tool.
	LLMText string

	// IsError marks a failure the model can act on.
	IsError bool
	// Error is a short message ("invalid tool_inputs for create_todo").
	Error string
	// Feedback tells the model how to fix it ("/priority: must be <= 5").
	Feedback string
}

// ErrorResult returns an error Result with the given message and feedback.
func ErrorResult(message, feedback string) Result {
	return Result{IsError: true, Error: message, Feedback: feedback}
}
