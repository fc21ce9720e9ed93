package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

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
	return nil
}
