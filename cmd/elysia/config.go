package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/term"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/store"
)

// newFlags returns a flag set that reports errors instead of exiting, with
// the --config flag every command takes.
func newFlags(name string, _ io.Writer) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("elysia "+name, flag.ContinueOnError)
	// parseFlags reports errors and help itself (help on stdout).
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	config := fs.String("config", "mcp.json", "the mcp.json file")
	return fs, config
}

// parseFlags parses args and turns flag errors into usage errors. Flags
// may come before, between or after the positional arguments, as users of
// git, docker and kubectl expect ("mcp list todo --config x.json"); "--"
// ends the flags. Whether a flag takes the next argument as its value comes
// from fs: a boolean flag never does, and "--flag=value" carries its own.
// fs.Args() returns the positional arguments in order.
func parseFlags(fs *flag.FlagSet, args []string) error {
	var flags, positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if !isFlag(a) {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		if takesValue(fs, a) {
			if i+1 == len(args) { // let fs say the value is missing
				positional = nil
				break
			}
			i++
			flags = append(flags, args[i])
		}
	}
	if positional != nil {
		// "--" keeps a positional argument that looks like a flag from
		// being parsed again.
		flags = append(append(flags, "--"), positional...)
	}
	if err := fs.Parse(flags); err != nil {
		name := strings.TrimPrefix(fs.Name(), "elysia ")
		if errors.Is(err, flag.ErrHelp) {
			return &helpError{text: commandHelp(name, fs)}
		}
		return usageErr("%v (elysia %s --help lists the flags)", err, name)
	}
	return nil
}

// isFlag reports whether a looks like a flag: "-x" or "--x", but not a
// lone "-" (which by convention means standard input).
func isFlag(a string) bool { return len(a) > 1 && a[0] == '-' }

// takesValue reports whether flag argument a ("-name", "--name",
// "--name=value") needs the next argument as its value: it names a flag of
// fs that is not boolean and has no "=value" of its own. Flags fs does not
// define are left for fs.Parse to report.
func takesValue(fs *flag.FlagSet, a string) bool {
	name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
	if strings.Contains(name, "=") {
		return false
	}
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return false
	}
	return true
}

// loadConfig reads mcp.json for a command. At start-up, with a terminal on
// stdin, inputs without an ELYSIA_INPUT_<ID> variable are asked for (without
// echo for passwords). A bad file is a usage error (exit 2).
func loadConfig(path string, interactive bool) (*mcpconfig.Config, error) {
	opts := &mcpconfig.LoadOptions{}
	if interactive && term.IsTerminal(int(os.Stdin.Fd())) {
		opts.Prompt = promptTerminal
	}
	cfg, err := mcpconfig.Load(path, opts)
	if err != nil {
		return nil, &exitError{code: exitUsage, err: err}
	}
	return cfg, nil
}

// promptTerminal asks the operator for one input on the terminal.
func promptTerminal(in mcpconfig.Input) (string, error) {
	fd := int(os.Stdin.Fd())
	return askInput(in, os.Stdin, os.Stderr, func() ([]byte, error) { return term.ReadPassword(fd) })
}

// askInput asks for one input on w and reads the answer from r, or with
// readPassword (no echo) for a password. An empty answer takes the input's
// default, as VS Code's prompt does, so that the value is the one a reload
// (which never asks) resolves too. A password's default is never printed.
func askInput(in mcpconfig.Input, r io.Reader, w io.Writer, readPassword func() ([]byte, error)) (string, error) {
	label := in.Description
	if label == "" {
		label = in.ID
	}
	hint := ""
	switch {
	case in.Default != "" && in.Password:
		hint = " [Enter for the default]"
	case in.Default != "":
		hint = " [" + in.Default + "]"
	}
	// Terminal output: a failed write has nowhere to be reported.
	_, _ = fmt.Fprint(w, termLine(fmt.Sprintf("%s (%s)%s", label, mcpconfig.InputEnvVar(in.ID), hint))+": ")
	var answer string
	if in.Password {
		b, err := readPassword()
		_, _ = fmt.Fprintln(w)
		if err != nil {
			return "", err
		}
		answer = string(b)
	} else {
		line, err := bufio.NewReader(r).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", err
		}
		answer = strings.TrimRight(line, "\r\n")
	}
	if answer == "" {
		answer = in.Default
	}
	return answer, nil
}

// cmdConfigCheck validates an mcp.json: exit 0 with a summary, or 2 with the
// error (file:line:col and what is wrong).
func cmdConfigCheck(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs, config := newFlags("config check", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	path := *config
	if fs.NArg() > 1 {
		return usageErr("config check: want at most one FILE")
	}
	if fs.NArg() == 1 {
		path = fs.Arg(0)
	}
	cfg, err := loadConfig(path, false)
	if err != nil {
		return err
	}
	warnings := cfg.Warnings
	for _, s := range cfg.Servers {
		if w := commandWarning(s); w != "" {
			warnings = append(warnings, w)
		}
	}
	for _, w := range warnings {
		_, _ = fmt.Fprintln(stderr, "warning:", termText(w)) // terminal output: nowhere to report a failed write
	}
	// Terminal output: a failed write has nowhere to be reported.
	_, _ = fmt.Fprintf(stdout, "%s: ok, %d server(s)\n", termLine(path), len(cfg.Servers))
	for _, s := range cfg.Servers {
		_, _ = fmt.Fprintln(stdout, termLine(fmt.Sprintf("  %-20s %-6s %s%s", s.Name, s.Transport, mcpconfig.ToolName(s.Name), serverNote(s))))
	}
	return nil
}

// commandWarning says, masked, when s is an enabled stdio server whose
// command the gateway will not find or may not run (it looks the command up
// as exec.LookPath does, from the service's working folder); "" otherwise.
// The file is still valid: the command may be installed before the service
// starts.
func commandWarning(s mcpconfig.ServerConfig) string {
	if !s.Enabled || s.Unresolved != "" || s.Transport != mcpconfig.TransportStdio || s.Command == "" {
		return ""
	}
	if _, err := exec.LookPath(s.Command); err != nil {
		why := "not found on PATH"
		switch {
		case errors.Is(err, fs.ErrPermission):
			why = "not executable"
		case strings.ContainsRune(s.Command, filepath.Separator):
			why = "not found"
		}
		return s.Mask(fmt.Sprintf("server %q: command %q %s: its calls will fail (%v)", s.Name, s.Command, why, errors.Unwrap(err)))
	}
	return ""
}

// serverNote says why a server will not run, masked: an unresolved
// server's reason may name a path built from a secret (an envFile under
// ${env:...}).
func serverNote(s mcpconfig.ServerConfig) string {
	switch {
	case !s.Enabled:
		return "  (disabled)"
	case s.Unresolved != "":
		return "  (cannot run: " + s.Mask(s.Unresolved) + ")"
	}
	return ""
}

// dbMaxConns reads ELYSIA_DB_MAX_CONNS, the bound on the open PostgreSQL
// connections of this process ([store.Options.MaxConns]); unset or empty
// is 0, the store's default.
func dbMaxConns(lookup func(string) (string, bool)) (int, error) {
	v, ok := lookup("ELYSIA_DB_MAX_CONNS")
	if !ok || strings.TrimSpace(v) == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 2 {
		return 0, fmt.Errorf("ELYSIA_DB_MAX_CONNS=%q: want a whole number of connections, 2 or more (unset: %d)", v, store.DefaultMaxConns)
	}
	return n, nil
}
