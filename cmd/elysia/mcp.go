package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/elysia-go/elysia/cmd/elysia/internal/adapter"
	"github.com/elysia-go/elysia/llm"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/web"
)

// findServer returns the config of a server by name or gateway tool name.
func findServer(cfg *mcpconfig.Config, name string) (mcpconfig.ServerConfig, error) {
	var names []string
	for _, s := range cfg.Servers {
		if s.Name == name || mcpconfig.ToolName(s.Name) == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return mcpconfig.ServerConfig{}, usageErr("no server %q in %s (servers: %s)", name, cfg.File, strings.Join(names, ", "))
}

// loadServer loads the config at path and returns the server called name
// with the options an mcp command opens its gateway with.
func loadServer(path, name string, stderr io.Writer) (mcpconfig.ServerConfig, *mcpgateway.Options, error) {
	cfg, err := loadConfig(path, true)
	if err != nil {
		return mcpconfig.ServerConfig{}, nil, err
	}
	return serverOptions(cfg, name, stderr)
}

// serverOptions returns the server of cfg called name with the options an
// mcp command opens its gateway with.
func serverOptions(cfg *mcpconfig.Config, name string, stderr io.Writer) (mcpconfig.ServerConfig, *mcpgateway.Options, error) {
	sc, err := findServer(cfg, name)
	if err != nil {
		return mcpconfig.ServerConfig{}, nil, err
	}
	opts, err := cliOAuth(&mcpgateway.Options{Logger: cliLogger(stderr)})
	if err != nil {
		return mcpconfig.ServerConfig{}, nil, err
	}
	return sc, opts, nil
}

// cmdMCPList summarises every server, or connects to one and lists its tools.
func cmdMCPList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, config := newFlags("mcp list", stderr)
	dsn := pinsFlag(fs, "db", "with a SERVER, ")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfig(*config, true)
	if err != nil {
		return err
	}
	if fs.NArg() == 0 {
		opts, err := cliOAuth(&mcpgateway.Options{Logger: cliLogger(stderr)})
		if err != nil {
			return err
		}
		// The tabwriter buffers; a write error surfaces from Flush.
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		_, _ = fmt.Fprintln(w, "SERVER\tTOOL\tTRANSPORT\tSTATE\tTARGET\tNOTE")
		for _, s := range cfg.Servers {
			// The row renders the server's status as GET /api/servers
			// shows it to the CLI's user.
			st := cliStatus(ctx, s, opts)
			target := st.URL
			if st.Transport == mcpconfig.TransportStdio {
				target = strings.TrimSpace(st.Command + " " + strings.Join(st.Args, " "))
			}
			_, _ = fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", termLine(st.Name), st.ToolName, st.Transport, st.State, termLine(target), termLine(statusNote(st)))
			// Each copy of a server with copies on a row of its own,
			// under the server's.
			for _, c := range st.Copies {
				_, _ = fmt.Fprintf(w, "  %s\t\t%s\t%s\t%s\t%s\n", c.Label, c.Transport, c.State, termLine(c.Where), termLine(copyNote(c)))
			}
		}
		return w.Flush()
	}
	if fs.NArg() > 1 {
		return usageErr("mcp list: want at most one SERVER")
	}
	sc, opts, err := serverOptions(cfg, fs.Arg(0), stderr)
	if err != nil {
		return err
	}
	closeDB, err := holdPins(ctx, *dsn, opts)
	if err != nil {
		return err
	}
	defer closeDB()
	g := mcpgateway.New(sc, opts)
	defer func() { _ = g.Close() }() // Gateway.Close always returns nil
	infos, err := g.List(mcpgateway.WithUser(ctx, cliUser()))
	if err != nil {
		return failure(err)
	}
	// Terminal output: a failed write has nowhere to be reported. Names,
	// parameters and descriptions are the server's: hostile until escaped.
	_, _ = fmt.Fprintf(stdout, "%s (%s): %d tool(s)\n", termLine(sc.Name), sc.Transport, len(infos))
	for _, ti := range infos {
		_, _ = fmt.Fprintf(stdout, "\n  %s(%s)\n", termLine(ti.Name), termLine(paramSummary(ti.InputSchema)))
		if d := termText(ti.Description); d != "" {
			_, _ = fmt.Fprintf(stdout, "    %s\n", strings.ReplaceAll(d, "\n", "\n    "))
		}
	}
	return nil
}

// cliStatus is s's status as the CLI's user sees it (adapter.Status over
// Gateway.StatusFor). It reads the token file and the user's secrets, and
// connects to nothing.
func cliStatus(ctx context.Context, s mcpconfig.ServerConfig, opts *mcpgateway.Options) web.ServerStatus {
	g := mcpgateway.New(s, opts)
	defer func() { _ = g.Close() }() // Gateway.Close always returns nil
	return adapter.Status(s, g.StatusFor(ctx, cliUser()))
}

// statusNote says what stops the server or what the CLI's user must do
// before using it: sign in, or set secrets; "" when nothing (or when the
// server asks only once called).
func statusNote(st web.ServerStatus) string {
	switch {
	case !st.Enabled:
		return "(disabled)"
	case st.Unresolved != "":
		return "(cannot run: " + st.Unresolved + ")"
	case st.State == string(mcpgateway.StateFailed) && st.LastError != "":
		return st.LastError
	case st.State != string(mcpgateway.StateNeedsSignIn):
		return ""
	case len(st.MissingSecrets) > 0:
		return fmt.Sprintf("needs_sign_in: %s must set %s", cliUser(), strings.Join(st.MissingSecrets, ", "))
	}
	return fmt.Sprintf("needs_sign_in: elysia mcp login %s (as %s)", st.Name, cliUser())
}

// copyNote says how a copy of a server with copies stands: serving, or
// down and why.
func copyNote(c web.ServerCopy) string {
	switch {
	case c.Down:
		return "down: " + c.LastError
	case c.Serving:
		return "serving"
	}
	return ""
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
func cmdMCPCall(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs, config := newFlags("mcp call", stderr)
	dsn := pinsFlag(fs, "db", "")
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
	sc, opts, err := loadServer(*config, fs.Arg(0), stderr)
	if err != nil {
		return err
	}
	stopTracing, err := startTracing(ctx, os.LookupEnv, cliLogger(stderr))
	if err != nil {
		return err
	}
	defer stopTracing() // last: the spans of closing go out too
	ctx, span := startCommandSpan(ctx, "mcp call",
		attribute.String("elysia.mcp.server", sc.Name), attribute.String("gen_ai.tool.name", fs.Arg(1)))
	defer func() { endCommandSpan(span, err) }()
	if sc.Sampling.Enabled() {
		model, info, err := llm.FromEnv(ctx, os.LookupEnv, nil)
		if err != nil {
			return usageErr("model: %v", err)
		}
		opts.Sampler = modelSampler{model: model, name: info.Model}
	}
	closeDB, err := holdPins(ctx, *dsn, opts)
	if err != nil {
		return err
	}
	defer closeDB()
	g := mcpgateway.New(sc, opts)
	defer func() { _ = g.Close() }() // Gateway.Close always returns nil
	res, err := g.ExecuteWith(mcpgateway.WithUser(ctx, cliUser()), fs.Arg(1), inputs, callEmitter{stderr: stderr, asker: newTerminalAsker(stderr)})
	switch {
	case errors.Is(err, mcpgateway.ErrToolHeld): // not a typo: the server changed it
		return failure(err)
	case errors.Is(err, tools.ErrUnknownTool): // a mistyped TOOL: the error names the closest
		return usageErr("%w", err)
	case err != nil:
		return failure(err) // invalid inputs, or the server failed
	}
	_, _ = fmt.Fprintln(stdout, termText(res.Text())) // terminal output: nowhere to report a failed write
	if res.IsError {
		return failure(fmt.Errorf("%s/%s returned an error", sc.Name, fs.Arg(1)))
	}
	return nil
}

// cliLogger logs warnings and errors of one-shot commands to stderr, but
// for a failed connect's warning: the command reports that error as its
// own ("elysia: ..."), and a person should read it once.
func cliLogger(stderr io.Writer) *slog.Logger {
	return slog.New(quietConnectHandler{slog.NewTextHandler(escapedWriter{stderr}, &slog.HandlerOptions{Level: slog.LevelWarn})})
}

// quietConnectHandler drops mcpgateway's warning of a failed connect.
type quietConnectHandler struct{ slog.Handler }

func (h quietConnectHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == mcpgateway.LogConnectFailed {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h quietConnectHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return quietConnectHandler{h.Handler.WithAttrs(attrs)}
}

func (h quietConnectHandler) WithGroup(name string) slog.Handler {
	return quietConnectHandler{h.Handler.WithGroup(name)}
}

// defaultUser is the user of a keyless service on every surface: the web
// page, /mcp, `elysia mcp serve` and the CLI, so that a sign-in or a
// secret set on one serves all of them.
const defaultUser = "cli"

// cliUser is the user the CLI signs in and calls as, and a keyless
// service's user: ELYSIA_USER, else defaultUser.
func cliUser() string {
	if u := os.Getenv("ELYSIA_USER"); u != "" {
		return u
	}
	return defaultUser
}

// cliOAuth completes o with the CLI's token file and, when
// ELYSIA_OAUTH_BROWSER is "fetch", sign-in from inside a call (for test
// authorization servers that approve at once; open and print need a
// person, so they are for `elysia mcp login`).
func cliOAuth(o *mcpgateway.Options) (*mcpgateway.Options, error) {
	store, err := newTokenFile()
	if err != nil {
		return nil, err
	}
	o.Tokens = store
	switch b := os.Getenv("ELYSIA_OAUTH_BROWSER"); b {
	case "fetch":
		o.Browser = mcpauth.FetchBrowser{}
	case "", "open", "print":
	default:
		return nil, usageErr("ELYSIA_OAUTH_BROWSER=%q: want open, print or fetch", b)
	}
	return o, nil
}

// cliBrowser returns the Browser named by --browser or
// ELYSIA_OAUTH_BROWSER (default open).
func cliBrowser(name string, stderr io.Writer) (mcpauth.Browser, error) {
	if name == "" {
		name = os.Getenv("ELYSIA_OAUTH_BROWSER")
	}
	switch name {
	case "", "open":
		return openBrowser{stderr: stderr}, nil
	case "print":
		return printBrowser{stderr: stderr}, nil
	case "fetch":
		return mcpauth.FetchBrowser{}, nil
	}
	return nil, usageErr("--browser %q: want open, print or fetch", name)
}

// printBrowser prints the authorization URL for the user to open.
type printBrowser struct{ stderr io.Writer }

func (b printBrowser) Open(_ context.Context, authURL string) error {
	// The URL is the authorization server's: printed without its controls.
	_, _ = fmt.Fprintf(b.stderr, "Open this link to sign in:\n\n  %s\n\nWaiting for the sign-in...\n", termLine(authURL))
	return nil
}

// openBrowser opens the authorization URL in the desktop's browser, and
// prints it too, for when no browser comes up.
type openBrowser struct{ stderr io.Writer }

func (b openBrowser) Open(ctx context.Context, authURL string) error {
	_ = printBrowser(b).Open(ctx, authURL)
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	cmd := exec.CommandContext(ctx, name, authURL)
	if err := cmd.Start(); err != nil {
		_, _ = fmt.Fprintf(b.stderr, "(could not start %s: %v; open the link yourself)\n", name, err)
		return nil
	}
	go func() { _ = cmd.Wait() }() // the opener returns at once; reap it
	return nil
}

// loginTimeout bounds `elysia mcp login`, the user's time in the browser
// included.
const loginTimeout = 5 * time.Minute

// cmdMCPLogin signs the CLI's user in to one server.
func cmdMCPLogin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, config := newFlags("mcp login", stderr)
	browserName := fs.String("browser", "", "how to reach the sign-in page: open, print or fetch (default $ELYSIA_OAUTH_BROWSER, else open)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErr("mcp login: want SERVER")
	}
	browser, err := cliBrowser(*browserName, stderr)
	if err != nil {
		return err
	}
	sc, opts, err := loadServer(*config, fs.Arg(0), stderr)
	if err != nil {
		return err
	}
	if err := takesSignIn(sc); err != nil {
		return err
	}
	opts.Browser = nil
	g := mcpgateway.New(sc, opts)
	defer func() { _ = g.Close() }() // Gateway.Close always returns nil
	ctx, cancel := context.WithTimeout(ctx, loginTimeout)
	defer cancel()
	if err := g.SignIn(ctx, cliUser(), browser); err != nil {
		return failure(err)
	}
	_, _ = fmt.Fprint(stdout, termf("signed in to %s as %s", sc.Name, cliUser())+"\n")
	return nil
}

// cmdMCPLogout forgets the CLI user's sign-in to one server.
func cmdMCPLogout(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, config := newFlags("mcp logout", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErr("mcp logout: want SERVER")
	}
	sc, opts, err := loadServer(*config, fs.Arg(0), stderr)
	if err != nil {
		return err
	}
	if err := takesSignIn(sc); err != nil {
		return err
	}
	g := mcpgateway.New(sc, opts)
	defer func() { _ = g.Close() }() // Gateway.Close always returns nil
	if err := g.SignOut(ctx, cliUser()); err != nil {
		return failure(err)
	}
	_, _ = fmt.Fprint(stdout, termf("signed out of %s as %s", sc.Name, cliUser())+"\n")
	return nil
}

// takesSignIn refuses mcp login and logout on a server without sign-in,
// alike: there is nothing to sign in to or out of.
func takesSignIn(sc mcpconfig.ServerConfig) error {
	if mcpauth.NeedsAuth(sc) {
		return nil
	}
	return usageErr("server %q takes no sign-in (a stdio server, or one with a static Authorization header)", sc.Name)
}
