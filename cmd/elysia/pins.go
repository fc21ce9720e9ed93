package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/elysia-go/elysia/cmd/elysia/internal/adapter"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/store"
)

// pinsTimeout bounds `elysia mcp pins`: connecting, listing and the
// database.
const pinsTimeout = 2 * time.Minute

// cmdMCPPins is `elysia mcp pins [list|approve|reset] SERVER [TOOL...]`:
// the server's pinned tools and those whose definitions changed (list, the
// default), the approval of the changed ones (all, or the TOOLs), or
// forgetting its pins so the next listing pins afresh (reset). It reads
// and writes the database elysia serve uses.
func cmdMCPPins(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	action := "list"
	if len(args) > 0 && (args[0] == "list" || args[0] == "approve" || args[0] == "reset") {
		action, args = args[0], args[1:]
	}
	fs, config := newFlags("mcp pins", stderr)
	dsn := fs.String("db", os.Getenv("ELYSIA_DATABASE_URL"), "database: a SQLite path or a postgres:// URL ("+dbFlagHelp+")")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 1 {
		return usageErr("mcp pins: want [list|approve|reset] SERVER [TOOL...]")
	}
	if fs.NArg() > 1 && action != "approve" {
		return usageErr("mcp pins %s: want SERVER alone, got %q after it", action, fs.Arg(1))
	}
	if *dsn == "-" {
		return usageErr("mcp pins: the pins are kept in the database: give --db")
	}
	sc, opts, err := loadServer(*config, fs.Arg(0), stderr)
	if err != nil {
		return err
	}
	if sc.Pin == mcpconfig.PinOff && action != "reset" {
		return usageErr(`mcp pins: server %q has "pin": "off": its tools are not pinned`, sc.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, pinsTimeout)
	defer cancel()
	where, err := databaseDSN(*dsn, os.Getenv)
	if err != nil {
		return err
	}
	db, err := store.Open(ctx, where, nil)
	if err != nil {
		return failure(fmt.Errorf("open the database: %w", err))
	}
	defer func() { _ = db.Close() }()
	pins := adapter.StorePins{Store: db}
	opts.Pins = pins
	g := mcpgateway.New(sc, opts)
	defer func() { _ = g.Close() }() // Gateway.Close always returns nil

	switch action {
	case "reset":
		n, err := g.ResetPins(ctx)
		if err != nil {
			return failure(err)
		}
		_, _ = fmt.Fprint(stdout, termf("forgot %d pins of %s: its next listing pins its tools afresh", n, sc.Name)+"\n")
		return nil
	case "approve":
		approved, err := g.ApprovePins(ctx, fs.Args()[1:]...)
		if errors.Is(err, mcpgateway.ErrNothingPending) {
			return usageErr("%v", err)
		}
		if err != nil {
			return failure(err)
		}
		_, _ = fmt.Fprint(stdout, termf("approved %s of %s; a running elysia serve offers them within a minute",
			strings.Join(approved, ", "), sc.Name)+"\n")
		return nil
	}
	if _, err := g.List(ctx); err != nil {
		return failure(err)
	}
	current, err := pins.Pins(ctx, sc.Name)
	if err != nil {
		return failure(err)
	}
	changes := map[string]mcpgateway.ToolChange{}
	for _, c := range g.ToolChanges() {
		changes[c.Name] = c
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "TOOL\tSTATE\tPINNED\tFROM")
	for _, p := range current {
		state := "pinned"
		if c, ok := changes[p.Tool]; ok {
			state = pinState(c)
		}
		_, _ = fmt.Fprint(tw, termf("%s\t%s\t%s\t%s", p.Tool, state, p.PinnedAt.Format(time.RFC3339), p.Copy)+"\n")
	}
	for _, c := range g.ToolChanges() {
		if c.Change == mcpgateway.ChangeNew {
			_, _ = fmt.Fprint(tw, termf("%s\t%s\t-\t-", c.Name, pinState(c))+"\n")
		}
	}
	_ = tw.Flush()
	for _, c := range g.ToolChanges() {
		_, _ = fmt.Fprint(stdout, termf("\n%s: %s", c.Name, c.Reason)+"\n")
		if old, cur := definitionField(c.Old, "description"), definitionField(c.New, "description"); old != cur {
			if c.Change == mcpgateway.ChangeChanged {
				_, _ = fmt.Fprint(stdout, termf("  - description: %s", old)+"\n")
			}
			_, _ = fmt.Fprint(stdout, termf("  + description: %s", cur)+"\n")
		}
		for _, key := range []string{"inputSchema", "outputSchema", "annotations"} {
			if old, cur := definitionField(c.Old, key), definitionField(c.New, key); old != cur {
				if c.Change == mcpgateway.ChangeChanged {
					_, _ = fmt.Fprint(stdout, termf("  - %s: %s", key, old)+"\n")
				}
				_, _ = fmt.Fprint(stdout, termf("  + %s: %s", key, cur)+"\n")
			}
		}
	}
	if len(changes) > 0 {
		_, _ = fmt.Fprint(stdout, termf("\napprove with: elysia mcp pins approve %s [TOOL...]", sc.Name)+"\n")
	}
	return nil
}

// pinsFlag adds the flag name to a one-shot command that lists or calls a
// server's tools: the database whose pinned tools they are held against,
// as elysia serve holds them (see holdPins). when says when it counts.
func pinsFlag(fs *flag.FlagSet, name, when string) *string {
	return fs.String(name, os.Getenv("ELYSIA_DATABASE_URL"), when+"the database of the pinned tools, elysia serve's by default: "+
		"a changed or new tool is held back as the service holds it; - for none ("+dbFlagHelp+")")
}

// holdPins makes the gateways of opts hold a server's tools against the
// pinned tools of the database dsn names (as pinsFlag gives it), as
// elysia serve's do; "-" leaves opts without pins. The returned func
// closes the database.
func holdPins(ctx context.Context, dsn string, opts *mcpgateway.Options) (closeDB func(), err error) {
	if dsn == "-" {
		return func() {}, nil
	}
	where, err := databaseDSN(dsn, os.Getenv)
	if err != nil {
		return nil, err
	}
	db, err := store.Open(ctx, where, &store.Options{Logger: opts.Logger})
	if err != nil {
		return nil, failure(fmt.Errorf("open the database of the pinned tools: %w", err))
	}
	opts.Pins = adapter.StorePins{Store: db}
	return func() { _ = db.Close() }, nil // the command's work is done: nothing to report
}

// pinState is the STATE column of a changed or new tool.
func pinState(c mcpgateway.ToolChange) string {
	if c.Held {
		return "held (" + c.Change + ")"
	}
	return c.Change + " (warned)"
}

// definitionField returns key of the definition def (JSON), as JSON for
// an object and as text for a string; "" when it has none.
func definitionField(def, key string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(def), &m) != nil || m[key] == nil {
		return ""
	}
	var s string
	if json.Unmarshal(m[key], &s) == nil {
		return s
	}
	return string(m[key])
}
