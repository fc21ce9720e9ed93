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
//	elysia mcp search WORDS...
//	elysia mcp add NAME[@VERSION] [--name SERVER] [--per-user-secrets] [--set NAME=VALUE]
//	elysia mcp update [SERVER] [--dry-run]
//	elysia mcp remove SERVER
//	elysia mcp pins [list|approve|reset] SERVER [TOOL...] [--db DSN]
//	elysia config check [FILE]
//	elysia help [COMMAND], elysia COMMAND --help, elysia --version
//
// Exit codes: 0 success, 1 a tool or server failure, 2 usage or config
// error, 130 (128+signal) interrupted by Ctrl-C or SIGTERM.
package main

import (
	"context"
	"errors"
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

func main() {
	ctx, stop := notifyContext(context.Background())
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// signalError is the cause of the command's ctx when a signal ended it.
type signalError struct{ sig syscall.Signal }

func (e signalError) Error() string { return "interrupted by " + e.sig.String() }

// notifyContext returns a ctx that SIGINT or SIGTERM cancels, with a
// signalError as its cause; stop releases the signals.
func notifyContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		select {
		case s := <-ch:
			sig, _ := s.(syscall.Signal)
			cancel(signalError{sig: sig})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		<-ended
		cancel(nil)
	}
}

// run executes one command line and returns its exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := dispatch(ctx, args, stdout, stderr)
	var he *helpError
	var sig signalError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &he): // --help: the help goes where the user asked for it
		_, _ = fmt.Fprint(stdout, he.text) // nowhere left to report a failed write
		return exitOK
	case errors.As(context.Cause(ctx), &sig) && ctx.Err() != nil:
		// Ctrl-C or SIGTERM ended the command: the error is only the
		// cancellation it caused. 128+n is the shell's convention.
		_, _ = fmt.Fprintln(stderr, "elysia: interrupted")
		return 128 + int(sig.sig)
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
		_, _ = fmt.Fprint(stderr, usage())
		return err
	}
	if len(args) == 0 {
		_, _ = fmt.Fprint(stderr, usage())
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
		if err := groupHelp("mcp", args, stderr); err != nil {
			return err
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
		case "search":
			return cmdMCPSearch(ctx, sub(2), stdout, stderr)
		case "add":
			return cmdMCPAdd(ctx, sub(2), stdout, stderr)
		case "update":
			return cmdMCPUpdate(ctx, sub(2), stdout, stderr)
		case "remove":
			return cmdMCPRemove(ctx, sub(2), stdout, stderr)
		case "pins":
			return cmdMCPPins(ctx, sub(2), stdout, stderr)
		}
		return unknownSub("mcp", args[1])
	case "config":
		if err := groupHelp("config", args, stderr); err != nil {
			return err
		}
		if args[1] == "check" {
			return cmdConfigCheck(ctx, sub(2), stdout, stderr)
		}
		return unknownSub("config", args[1])
	case "help", "-h", "-help", "--help":
		if len(args) > 1 { // "elysia help mcp call" is "elysia mcp call --help"
			return dispatch(ctx, append(slices.Clone(args[1:]), "--help"), stdout, stderr)
		}
		return &helpError{text: usage()}
	case "version", "-version", "--version":
		_, _ = fmt.Fprint(stdout, versionText())
		return nil
	}
	return usageErr("unknown command %q%s; elysia --help lists the commands", args[0], suggest(args[0], append(subcommands(""), "help", "version")))
}

// groupHelp handles a command group's line (args[0] is the group) that
// names no command, or asks for help: it returns the error to give, or nil
// when args[1] names the command to run.
func groupHelp(group string, args []string, stderr io.Writer) error {
	if len(args) < 2 {
		_, _ = fmt.Fprint(stderr, groupUsage(group))
		return usageErr("%s: want %s", group, orList(subcommands(group)))
	}
	switch {
	case args[1] == "help" && len(args) > 2: // "elysia mcp help call"
		return usageErr("%s help: use elysia %s %s --help", group, group, args[2])
	case args[1] == "help", args[1] == "-h", args[1] == "-help", args[1] == "--help":
		return &helpError{text: groupUsage(group)}
	}
	return nil
}

// unknownSub is the usage error for "elysia GROUP TYPED".
func unknownSub(group, typed string) error {
	var names []string
	for _, s := range subcommands(group) {
		names = append(names, group+" "+s)
	}
	return usageErr("%s: unknown command %q%s; want %s", group, typed, suggest(group+" "+typed, names), orList(subcommands(group)))
}

// orList renders ["a", "b", "c"] as "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// splitGlobal takes the global flags (those every command defines, see
// newFlags) off the front of args, with their values, and returns them and
// the command line that follows. A help or version flag or "--" ends them; any other
// flag before the command is a usage error, since only the command knows
// whether it takes a value.
func splitGlobal(args []string) (global, rest []string, err error) {
	fs, _ := newFlags("", io.Discard)
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return global, args[i+1:], nil
		case !isFlag(a), a == "-h", a == "-help", a == "--help", a == "-version", a == "--version":
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
