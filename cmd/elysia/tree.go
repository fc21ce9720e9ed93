package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"

	"github.com/elysia-go/elysia/cmd/elysia/internal/adapter"
	"github.com/elysia-go/elysia/discovery"
	"github.com/elysia-go/elysia/tree"
)

// cmdTree prints the text view of a new conversation's tree with the
// configured gateways. Nothing is connected.
func cmdTree(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, config := newFlags("tree", stderr)
	mode := fs.String("mode", "one_branch", "initialisation: one_branch, multi_branch or empty")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	m, err := tree.ParseInitMode(*mode)
	if err != nil {
		return usageErr("--mode: %v", err)
	}
	if _, err := loadConfig(*config, false); err != nil {
		return err
	}
	trees := tree.NewManager(&tree.Options{Logger: cliLogger(stderr)})
	d := discovery.New(*config, trees, &discovery.Options{Logger: slog.New(slog.DiscardHandler)})
	// Best effort: the command's result is what gets reported, and closing
	// gateways that never connected does not fail.
	defer func() { _ = d.Close() }()
	if err := d.Load(ctx); err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	t, err := trees.DefaultTree(m)
	if err != nil {
		return failure(err)
	}
	// Terminal output: nowhere to report a failed write. The tree holds
	// servers' names and descriptions.
	_, _ = fmt.Fprint(stdout, termText(t.Text()))
	// Each server's state, as `mcp list` shows it: what a person reading
	// the tree needs to know of the gateways on it.
	if gws := d.Gateways(); len(gws) > 0 {
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		_, _ = fmt.Fprintln(w, "\nSERVER\tSTATE\tNOTE")
		for _, g := range gws {
			st := adapter.Status(g.Config(), g.StatusFor(ctx, cliUser()))
			_, _ = fmt.Fprintf(w, "%s\t%s\t%s\n", termLine(st.Name), st.State, termLine(statusNote(st)))
		}
		return w.Flush()
	}
	return nil
}
