package mcpregistry

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNotFound is returned by Client.Get when the registry has no such
// server or version.
var ErrNotFound = errors.New("not in the registry")

// ErrUnreachable is the category of a registry that could not be asked:
// refused, unresolvable, or silent past the timeout.
var ErrUnreachable = errors.New("registry unreachable")

// ErrBadAnswer is the category of a registry answer that cannot be used:
// an error status, too large, or not the registry API's JSON.
var ErrBadAnswer = errors.New("unusable registry answer")

// ErrInvalidServer is the category of a server.json that cannot be turned
// into an mcp.json entry safely; see *InvalidServerError.
var ErrInvalidServer = errors.New("invalid server.json")

// InvalidServerError is a field of a server.json that NewEntry refuses: a
// hostile or malformed name, URL, package, argument or variable. It
// matches ErrInvalidServer.
type InvalidServerError struct {
	// Server and Version name the server.json as the registry gave them
	// (quoted safely in Error).
	Server, Version string
	// Field is where the problem is: "remotes[0].url",
	// "packages[1].environmentVariables[0].name", ...
	Field string
	// Reason says what is wrong, in lower case.
	Reason string
}

func (e *InvalidServerError) Error() string {
	return fmt.Sprintf("server.json of %q version %q: %s: %s", termSafe(e.Server), termSafe(e.Version), e.Field, e.Reason)
}

// Is reports whether target is ErrInvalidServer.
func (e *InvalidServerError) Is(target error) bool { return target == ErrInvalidServer }

// MissingValueError is a value a server needs that has no default, was not
// given in EntryOptions.Values, and could not be asked for (no Ask, or Ask
// failed).
type MissingValueError struct {
	// Server is the server's name in the registry.
	Server string
	// Value is what is missing.
	Value Value
	// Err is Ask's error, or nil when there was no Ask.
	Err error
}

func (e *MissingValueError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s needs a value for the %s %s", termSafe(e.Server), e.Value.Kind, e.Value.Name)
	if e.Value.Description != "" {
		fmt.Fprintf(&b, " (%s)", termSafe(e.Value.Description))
	}
	b.WriteString(", which has no default")
	if len(e.Value.Choices) > 0 {
		fmt.Fprintf(&b, "; one of %s", termSafe(strings.Join(e.Value.Choices, ", ")))
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Unwrap returns Ask's error, or nil.
func (e *MissingValueError) Unwrap() error { return e.Err }
