package mcpconfig

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidConfig is the category of every problem found in mcp.json (bad
// JSON, an unknown type, a missing command, a duplicate name, ...). Every
// *ConfigError matches it with errors.Is, also inside an errors.Join, so a
// command can exit with code 2 without looking at the details.
var ErrInvalidConfig = errors.New("invalid mcp.json")

// ErrServerExists is returned by Edit.Add for a name that already has an
// entry in the file: nothing is overwritten.
var ErrServerExists = errors.New("a server of that name is already there")

// ErrNoServer is returned by the Edit methods for a name that has no entry
// in the file.
var ErrNoServer = errors.New("no such server")

// ErrFileChanged is returned by EditFile when the file changed on disk
// while it was being edited: nothing was written, and trying again reads
// the new contents.
var ErrFileChanged = errors.New("mcp.json changed while it was being edited")

// ConfigError is one problem in mcp.json (or in a file it names, such as an
// envFile), located by file, line and column. Parse and Load return one, or
// several joined with errors.Join so the operator sees them all.
type ConfigError struct {
	// File is the path of the file as given to Load or Parse.
	File string
	// Line and Column are 1-based; Column counts characters (runes), not
	// bytes. Both are zero when the problem has no position (an unreadable
	// file, the MCP_URL environment variable).
	Line, Column int
	// Server names the server the problem belongs to; "" for the file.
	Server string
	// Msg says what is wrong, in lower case.
	Msg string
	// Err is the underlying error, if any (an fs error from Load).
	Err error
}

// Error reads like a compiler message:
// mcp.json:12:5: server "x": unknown type "foo" (want stdio, http or sse).
func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Column)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Server != "" {
		fmt.Fprintf(&b, "server %q: ", e.Server)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Is reports whether target is ErrInvalidConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// Unwrap returns the underlying error, or nil.
func (e *ConfigError) Unwrap() error { return e.Err }
