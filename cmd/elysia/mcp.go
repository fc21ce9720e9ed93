package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/elysia-go/elysia/llm"
	"github.com/elysia-go/elysia/mcpgateway"
)

// findServer returns the config of a server by name or gateway tool name.
func findServer(cfg *mcpgateway.Config, name string) (mcpgateway.ServerConfig, error) {
	var names []string
	for _, s := range cfg.Servers {
		if s.Name == name || mcpgateway.ToolName(s.Name) == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return mcpgateway.ServerConfig{}, usageErr("no server %q in %s (servers: %s)", name, cfg.File, strings.Join(names, ", "))
}

// cmdMCPList summarises every server, or connects to one and lists its tools.
func cmdMCPList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, config := newFlags("mcp list", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfig(*config, true)
	if err != nil {
		return err
	}
	if fs.NArg() == 0 {
		// The tabwriter buffers; a write error surfaces from Flush.
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		_, _ = fmt.Fprintln(w, "SERVER\tTOOL\tTRANSPORT\tTARGET\tNOTE")
		for _, s := range cfg.Servers {
			d := s.Display()
			target := d.URL
			if s.Transport == mcpgateway.TransportStdio {
				target = strings.TrimSpace(d.Command + " " + strings.Join(d.Args, " "))
			}
			_, _ = fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", s.Name, mcpgateway.ToolName(s.Name), s.Transport, target, strings.TrimSpace(serverNote(s)))
		}
		return w.Flush()
	}
	if fs.NArg() > 1 {
		return usageErr("mcp list: want at most one SERVER")
	}
	sc, err := findServer(cfg, fs.Arg(0))
	if err != nil {
		return err
	}
	g := mcpgateway.New(sc, &mcpgateway.Options{Logger: cliLogger(stderr)})
	defer func() { _ = g.Close() }() // Gateway.Close always returns nil
	infos, err := g.List(ctx)
	if err != nil {
		return failure(err)
	}
	// Terminal output: a failed write has nowhere to be reported.
	_, _ = fmt.Fprintf(stdout, "%s (%s): %d tool(s)\n", sc.Name, sc.Transport, len(infos))
	for _, ti := range infos {
		_, _ = fmt.Fprintf(stdout, "\n  %s(%s)\n", ti.Name, paramSummary(ti.InputSchema))
		if ti.Description != "" {
			_, _ = fmt.Fprintf(stdout, "    %s\n", ti.Description)
		}
	}
	return nil
}

// paramSummary renders an input schema's properties as "a*, b" (* = required).
func paramSummary(schema json.RawMessage) string {
	var s struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return ""
	}
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	dec := json.NewDecoder(bytes.NewReader(s.Properties))
	var names []string
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		name, _ := tok.(string)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			break
		}
		if required[name] {
			name += "*"
		}
		names = append(names, name)
	}
	return strings.Join(names, ", ")
}

// cmdMCPCall executes one tool and prints the result; a tool error (isError,
// invalid inputs, an unknown tool) or a server failure exits 1.
func cmdMCPCall(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, config := newFlags("mcp call", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 2 || fs.NArg() > 3 {
		return usageErr("mcp call: want SERVER TOOL ['JSON inputs']")
	}
	inputs := map[string]any{}
	if fs.NArg() == 3 {
		dec := json.NewDecoder(strings.NewReader(fs.Arg(2)))
		dec.UseNumber()
		if err := dec.Decode(&inputs); err != nil {
			return usageErr("mcp call: inputs must be a JSON object: %v", err)
		}
	}
	cfg, err := loadConfig(*config, true)
	if err != nil {
		return err
	}
	sc, err := findServer(cfg, fs.Arg(0))
	if err != nil {
		return err
	}
	opts := &mcpgateway.Options{Logger: cliLogger(stderr)}
	if sc.Sampling {
		model, info, err := llm.FromEnv(ctx, os.LookupEnv, nil)
		if err != nil {
			return usageErr("model: %v", err)
		}
		opts.Sampler = modelSampler{model: model, name: info.Model}
	}
	g := mcpgateway.New(sc, opts)
	defer func() { _ = g.Close() }() // Gateway.Close always returns nil
	res, err := g.ExecuteWith(ctx, fs.Arg(1), inputs, callEmitter{stderr: stderr, asker: newTerminalAsker(stderr)})
	if err != nil {
		return failure(err) // invalid inputs, an unknown tool, or the server failed
	}
	_, _ = fmt.Fprintln(stdout, res.Text()) // terminal output: nowhere to report a failed write
	if res.IsError {
		return failure(fmt.Errorf("%s/%s returned an error", sc.Name, fs.Arg(1)))
	}
	return nil
}

// cliLogger logs warnings and errors of one-shot commands to stderr.
func cliLogger(stderr io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
