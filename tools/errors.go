package tools

import "errors"

// ErrUnknownTool is matched (with errors.Is) by errors about a tool name that
// is not an option.
var ErrUnknownTool = errors.New("unknown tool")

// ErrInvalidArguments is matched (with errors.Is) by every *ArgumentError.
var ErrInvalidArguments = errors.New("invalid arguments")

// ArgumentError reports tool inputs that break the tool's input schema.
// Error() reads like "invalid tool_inputs for create_todo: missing property
// 'title'; /priority: must be <= 5".
type ArgumentError struct {
	// Tool is the tool whose inputs were wrong.
	Tool string
	// Problems are the individual failures, each naming the field (as a JSON
	// pointer, "/priority", or "missing property 'title'") and the rule broken.
	Problems []string
}

func (e *ArgumentError) Error() string {
	msg := "invalid tool_inputs for " + e.Tool
	for i, p := range e.Problems {
		if i == 0 {
			msg += ": " + p
		} else {
			msg += "; " + p
		}
	}
	return msg
}

// Feedback returns the problems joined for the model ("/priority: must be <= 5").
func (e *ArgumentError) Feedback() string {
	out := ""
	for i, p := range e.Problems {
		if i > 0 {
			out += "; "
		}
		out += p
	}
	return out
}

// Is reports whether target is ErrInvalidArguments.
func (e *ArgumentError) Is(target error) bool { return target == ErrInvalidArguments }
