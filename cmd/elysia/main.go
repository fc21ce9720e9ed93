// Command elysia is the Elysia-Go service and its command line:
//
//	elysia serve [--addr 127.0.0.1:8000] [--config mcp.json]
//	elysia query [--json] "..."
//	elysia tree
//	elysia mcp list [SERVER]
//	elysia mcp call SERVER TOOL 'JSON'
//	elysia mcp login SERVER [--browser open|print|fetch]
//	elysia mcp logout SERVER
//	elysia mcp serve
//	elysia config check [FILE]
//
// Exit codes: 0 success, 1 a tool or server failure, 2 usage or config error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
)

// Exit codes (DESIGN.md, "Commands a user runs").
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// exitError carries the exit code a command wants.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

func failure(err error) error { return &exitError{code: exitFailure, err: err} }

const usage = `usage: elysia <command> [flags]

commands:
  serve                     serve the HTTP API and web UI
  query [--json] "..."      run the agent on one query in the terminal
  tree                      print the decision tree with the configured gateways
  mcp list [SERVER]         summarise every server, or list one server's tools
  mcp call SERVER TOOL JSON execute one tool of a server
  mcp login SERVER [--browser open|print|fetch]
                            sign in to a server (user $ELYSIA_USER, default cli)
  mcp logout SERVER         forget the sign-in to a server
  mcp serve                 serve every server as one MCP server over stdio
                            (user $ELYSIA_USER, default cli)
  config check [FILE]       validate an mcp.json

every command takes --config FILE (default ./mcp.json), before or after the
command; flags may follow the arguments, and -- ends the flags
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line and returns its exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := dispatch(ctx, args, stdout, stderr)
	if err == nil || errors.Is(err, flag.ErrHelp) { // -h: the flag set printed the usage
		return exitOK
	}
	// Errors may quote a server or a model: printed without their controls.
	_, _ = fmt.Fprintln(stderr, "elysia:", termText(err.Error())) // nowhere left to report a failed write
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitFailure
}

// dispatch runs the command args name. Global flags may come before the
// command ("elysia --config x.json mcp list"); they are handed to the
// command with its own arguments. Usage text it prints is best effort: a
// failed write to the terminal has nowhere to be reported.
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	global, args, err := splitGlobal(args)
	if err != nil {
		_, _ = fmt.Fprint(stderr, usage)
		return err
	}
	if len(args) == 0 {
		_, _ = fmt.Fprint(stderr, usage)
		return usageErr("no command given")
	}
	// sub returns the command's arguments after its n words, global
	// flags first.
	sub := func(n int) []string { return append(slices.Clone(global), args[n:]...) }
	switch args[0] {
	case "serve":
		return cmdServe(ctx, sub(1), stdout, stderr)
	case "query":
		return cmdQuery(ctx, sub(1), stdout, stderr)
	case "tree":
		return cmdTree(ctx, sub(1), stdout, stderr)
	case "mcp":
		if len(args) < 2 {
			return usageErr("mcp: want list or call")
		}
		switch args[1] {
		case "list":
			return cmdMCPList(ctx, sub(2), stdout, stderr)
		case "call":
			return cmdMCPCall(ctx, sub(2), stdout, stderr)
		case "login":
			return cmdMCPLogin(ctx, sub(2), stdout, stderr)
		case "logout":
			return cmdMCPLogout(ctx, sub(2), stdout, stderr)
		case "serve":
			return cmdMCPServe(ctx, sub(2), stdout, stderr)
		}
		return usageErr("mcp: unknown subcommand %q (want list, call, login, logout or serve)", args[1])
	case "config":
		if len(args) < 2 || args[1] != "check" {
			return usageErr("config: want check")
		}
		return cmdConfigCheck(ctx, sub(2), stdout, stderr)
	case "help", "-h", "-help", "--help":
		_, _ = fmt.Fprint(stdout, usage)
		return nil
	}
	_, _ = fmt.Fprint(stderr, usage)
	return usageErr("unknown command %q", args[0])
}

// splitGlobal takes the global flags (those every command defines, see
// newFlags) off the front of args, with their values, and returns them and
// the command line that follows. A help flag or "--" ends them; any other
// flag before the command is a usage error, since only the command knows
// whether it takes a value.
func splitGlobal(args []string) (global, rest []string, err error) {
	fs, _ := newFlags("", io.Discard)
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return global, args[i+1:], nil
		case !isFlag(a), a == "-h", a == "-help", a == "--help":
			return global, args[i:], nil
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if fs.Lookup(name) == nil {
			return nil, nil, usageErr("flag %s before the command: give it after the command (only --config may come first)", a)
		}
		global = append(global, a)
		if takesValue(fs, a) {
			if i+1 == len(args) {
				return nil, nil, usageErr("flag needs an argument: %s", a)
			}
			i++
			global = append(global, args[i])
		}
	}
	return global, nil, nil
}
