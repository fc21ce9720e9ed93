package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"golang.org/x/term"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/mcpgateway/mcpregistry"
)

// registryURLEnv names the registry the mcp search, add and update
// commands read.
const registryURLEnv = "ELYSIA_REGISTRY_URL"

// registryClient returns a client of $ELYSIA_REGISTRY_URL, default the
// official MCP Registry.
func registryClient() (*mcpregistry.Client, error) {
	u := os.Getenv(registryURLEnv)
	if strings.TrimSpace(u) == "" {
		u = mcpregistry.DefaultURL
	}
	c, err := mcpregistry.New(u, nil)
	if err != nil {
		return nil, usageErr("%s: %v", registryURLEnv, err)
	}
	return c, nil
}

// registryFailure is the exit error of a registry error: a registry down
// or answering nonsense is a failure (1); a name the registry does not
// have, or that is not a server's name, is the user's to fix (2).
func registryFailure(err error) error {
	switch {
	case errors.Is(err, mcpregistry.ErrUnreachable), errors.Is(err, mcpregistry.ErrBadAnswer):
		return failure(err)
	case errors.Is(err, mcpregistry.ErrNotFound):
		return usageErr("%v (elysia mcp search WORDS finds servers)", err)
	}
	return usageErr("%v", err)
}

// setFlag collects --set NAME=VALUE.
type setFlag map[string]string

func (s setFlag) String() string { return "" }

func (s setFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return errors.New("want NAME=VALUE")
	}
	s[k] = val
	return nil
}

// cmdMCPSearch lists the registry's servers whose name, title or
// description holds every word.
func cmdMCPSearch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, _ := newFlags("mcp search", stderr)
	limit := fs.Int("limit", 20, "show at most this many servers (1 to 100)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *limit < 1 || *limit > 100 {
		return usageErr("mcp search: --limit must be 1 to 100")
	}
	c, err := registryClient()
	if err != nil {
		return err
	}
	words := fs.Args()
	recs, err := c.Find(ctx, words, *limit)
	if err != nil {
		return searchFailure(err)
	}
	if len(recs) == 0 {
		// Terminal output: a failed write has nowhere to be reported.
		_, _ = fmt.Fprintf(stderr, "no server in %s matches %s\n", c.URL(), termLine(strings.Join(words, " ")))
		return nil
	}
	// The tabwriter buffers; a write error surfaces from Flush. What a
	// registry says is hostile until escaped.
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "NAME\tVERSION\tRUNS\tDESCRIPTION")
	for _, r := range recs {
		desc := r.Server.Description
		if r.Status != "" && r.Status != "active" {
			desc = "(" + r.Status + ") " + desc
		}
		if len(desc) > 80 {
			desc = desc[:77] + "..."
		}
		_, _ = fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", termLine(r.Server.Name), termLine(r.Server.Version), runs(&r.Server), termLine(desc))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_, _ = fmt.Fprintln(stderr, "add one with: elysia mcp add NAME")
	return nil
}

// searchFailure is the exit error of a failed Find: a registry down or
// answering nonsense is a failure (1), words it will not send are the
// user's to fix (2).
func searchFailure(err error) error {
	if errors.Is(err, mcpregistry.ErrBadSearch) {
		return usageErr("mcp search: %v", err)
	}
	return failure(err)
}

// runs says how a server can be run: "remote", "npm", ...
func runs(s *mcpregistry.Server) string {
	out := s.Runs()
	for i, r := range out {
		out[i] = termLine(r)
	}
	return strings.Join(out, ",")
}

// cmdMCPAdd writes the entry of a registry server into mcp.json.
func cmdMCPAdd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, config := newFlags("mcp add", stderr)
	name := fs.String("name", "", "the server's name in mcp.json (default: the part of NAME after the slash)")
	perUser := fs.Bool("per-user-secrets", false, "make each secret header or environment variable a ${user:...} secret each user sets, not an ${input:...} the operator gives")
	set := setFlag{}
	fs.Var(set, "set", "NAME=VALUE: a value the server needs (environment variable, header, argument or variable); repeatable")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErr("mcp add: want one NAME[@VERSION] (elysia mcp search WORDS finds servers)")
	}
	server, version, _ := strings.Cut(fs.Arg(0), "@")
	c, err := registryClient()
	if err != nil {
		return err
	}
	entryName := *name
	if entryName == "" {
		entryName = mcpregistry.EntryName(server)
	}
	// Before asking the registry or the user anything.
	if err := checkAbsent(*config, entryName); err != nil {
		return err
	}
	rec, err := c.Get(ctx, server, version)
	if err != nil {
		return registryFailure(err)
	}
	if rec.Status != "" && rec.Status != "active" {
		_, _ = fmt.Fprintf(stderr, "warning: %s %s is %s in the registry: %s\n", termLine(server), termLine(rec.Server.Version), termLine(rec.Status), termLine(rec.StatusMessage))
	}
	opts := &mcpregistry.EntryOptions{Name: entryName, PerUserSecrets: *perUser, Values: set, Ask: valueAsker()}
	entry, err := mcpregistry.NewEntry(&rec.Server, opts)
	if err != nil {
		return entryError(err)
	}
	if err := entry.AddTo(*config); err != nil {
		return editError(err)
	}
	_, _ = fmt.Fprintf(stdout, "added %q to %s: %s %s, %s\n", entry.Name, termLine(*config), termLine(server), termLine(rec.Server.Version), entry.From)
	describeEntry(stdout, entry)
	_, _ = fmt.Fprintln(stdout, "a running elysia serve picks it up; elysia mcp list shows it")
	return nil
}

// checkAbsent is a usage error when the file at path has a server called
// name.
func checkAbsent(path, name string) error {
	if err := mcpregistry.CheckAbsent(path, name); err != nil {
		return usageErr("%s already has a server %q; nothing changed (choose another name with --name, or elysia mcp update %s)", path, name, name)
	}
	return nil
}

// describeEntry says what an entry runs and what it still needs.
func describeEntry(w io.Writer, e *mcpregistry.Entry) {
	// Terminal output: a failed write has nowhere to be reported.
	if e.Transport == mcpconfig.TransportStdio {
		_, _ = fmt.Fprintf(w, "  runs: %s\n", termLine(strings.Join(append([]string{e.Command}, e.Args...), " ")))
	} else {
		_, _ = fmt.Fprintf(w, "  url:  %s\n", termLine(e.URL))
	}
	for _, in := range e.Inputs {
		_, _ = fmt.Fprintf(w, "  input %s (%s): set %s before elysia serve, or answer it there on a terminal\n",
			in.ID, termLine(in.Description), mcpconfig.InputEnvVar(in.ID))
	}
	for _, s := range e.UserSecrets {
		_, _ = fmt.Fprintf(w, "  user secret %s: each user sets it (the panel, or PUT /users/USER/secrets/%s)\n", s, s)
	}
	for _, s := range e.Skipped {
		_, _ = fmt.Fprintf(w, "  left out (optional): %s\n", termLine(s))
	}
}

// entryError maps a NewEntry error to its exit code.
func entryError(err error) error {
	var me *mcpregistry.MissingValueError
	if errors.As(err, &me) {
		return usageErr("%v: give it with --set %s=VALUE; nothing written", err, me.Value.Name)
	}
	if errors.Is(err, mcpregistry.ErrInvalidServer) {
		return failure(fmt.Errorf("refused: %w; nothing written", err))
	}
	return usageErr("%v; nothing written", err)
}

// editError maps an EditFile error to its exit code.
func editError(err error) error {
	switch {
	case errors.Is(err, mcpconfig.ErrServerExists), errors.Is(err, mcpconfig.ErrNoServer), errors.Is(err, mcpconfig.ErrInvalidConfig):
		return &exitError{code: exitUsage, err: err}
	}
	return failure(err)
}

// valueAsker asks for a value on the terminal, or is nil without one.
func valueAsker() func(mcpregistry.Value) (string, error) {
	if !term.IsTerminal(int(os.Stdin.Fd())) {
		return nil
	}
	return func(v mcpregistry.Value) (string, error) { return askValue(v, os.Stdin, os.Stderr) }
}

// askValue asks for one value on w and reads the answer from r.
func askValue(v mcpregistry.Value, r io.Reader, w io.Writer) (string, error) {
	label := v.Kind + " " + v.Name
	if v.Description != "" {
		label += " (" + v.Description + ")"
	}
	if len(v.Choices) > 0 {
		label += " [" + strings.Join(v.Choices, ", ") + "]"
	} else if v.Placeholder != "" {
		label += " [e.g. " + v.Placeholder + "]"
	}
	// Terminal output: a failed write has nowhere to be reported.
	_, _ = fmt.Fprint(w, termLine(label)+": ")
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	answer := strings.TrimRight(line, "\r\n")
	if answer == "" {
		return "", errors.New("no value given")
	}
	return answer, nil
}

// cmdMCPRemove removes one server entry from mcp.json.
func cmdMCPRemove(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs, config := newFlags("mcp remove", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErr("mcp remove: want one SERVER")
	}
	name := fs.Arg(0)
	if _, err := os.Stat(*config); err != nil {
		return usageErr("mcp remove: %v", err)
	}
	if err := mcpconfig.EditFile(*config, func(e *mcpconfig.Edit) error { return e.Remove(name) }); err != nil {
		return editError(err)
	}
	_, _ = fmt.Fprintf(stdout, "removed %q from %s\n", name, termLine(*config)) // nowhere to report a failed write
	return nil
}
