package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/elysia-go/elysia/discovery"
	"github.com/elysia-go/elysia/mcpendpoint"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
)

// discSource is the mcpendpoint.Source of a Discovery: its gateways.
type discSource struct{ d *discovery.Discovery }

var (
	_ mcpendpoint.Source          = discSource{}
	_ mcpendpoint.CatalogNotifier = discSource{}
)

func (s discSource) Upstreams() []mcpendpoint.Upstream {
	gws := s.d.Gateways()
	out := make([]mcpendpoint.Upstream, len(gws))
	for i, g := range gws {
		out[i] = g
	}
	return out
}

func (s discSource) Expose() mcpconfig.Expose { return s.d.Expose() }
func (s discSource) Notify(c chan<- struct{}) { s.d.Notify(c) }
func (s discSource) Stop(c chan<- struct{})   { s.d.Stop(c) }

// NotifyCatalog makes the endpoint look at its lists again for the
// changes of the servers' catalogue alone, not after every call.
func (s discSource) NotifyCatalog(c chan<- struct{}) { s.d.NotifyCatalog(c) }

// treeAgent is the mcpendpoint.Agent: the decision tree with the
// configured model, its runs counted for shutdown like the web's.
type treeAgent struct {
	trees *tree.Manager
	model llms.Model
	runs  *runTracker
}

func (a treeAgent) Ask(ctx context.Context, user, conv, question string, emit tools.Emitter) (mcpendpoint.Answer, error) {
	if !a.runs.Begin() {
		return mcpendpoint.Answer{}, fmt.Errorf("the service is shutting down")
	}
	defer a.runs.End()
	if conv == "" {
		conv = "mcp-" + randomID()
	}
	ans := mcpendpoint.Answer{ConversationID: conv}
	var mu sync.Mutex
	var text []string
	// A question goes to emit's client on its own goroutine, so the run's
	// other events keep flowing; each ends with the run.
	qctx, stopQuestions := context.WithCancel(ctx)
	var questions sync.WaitGroup
	err := a.trees.Query(ctx, a.model, user, conv, randomID(), question, func(env tools.Envelope) {
		switch env.Type {
		case tools.EventElicitation:
			var p tools.ElicitationPayload
			if asker, ok := emit.(tools.Asker); ok && json.Unmarshal(env.Payload, &p) == nil {
				questions.Go(func() { a.forward(qctx, asker, user, p) })
			}
		case tools.EventStatus:
			var p tools.StatusPayload
			if json.Unmarshal(env.Payload, &p) == nil && p.Text != "" {
				emit.Emit(tools.NewStatus(p.Text))
			}
		case tools.EventText:
			var p tools.TextPayload
			if json.Unmarshal(env.Payload, &p) == nil {
				mu.Lock()
				for _, o := range p.Objects {
					if s, ok := o["text"].(string); ok {
						text = append(text, s)
					}
				}
				mu.Unlock()
			}
		case tools.EventResult:
			var p tools.ResultPayload
			if json.Unmarshal(env.Payload, &p) == nil {
				mu.Lock()
				ans.Objects = append(ans.Objects, p.Objects...)
				mu.Unlock()
			}
		}
	})
	stopQuestions()
	questions.Wait()
	mu.Lock()
	defer mu.Unlock()
	ans.Text = strings.Join(text, "\n")
	return ans, err
}

// forward puts the run's question p to asker (the MCP client that called
// ask) and gives its answer to the run as the user's. An answer the form
// refuses becomes a decline; one for a question no longer waiting (it
// timed out) is dropped.
func (a treeAgent) forward(ctx context.Context, asker tools.Asker, user string, p tools.ElicitationPayload) {
	got, err := asker.Ask(ctx, tools.Question{Payload: p})
	if err != nil {
		return // the run ended, or the server's elicitation_timeout
	}
	if err := a.trees.Answer(ctx, user, p.ElicitationID, got); err != nil && got.Action == tools.ElicitAccept {
		_ = a.trees.Answer(ctx, user, p.ElicitationID, tools.Answer{Action: tools.ElicitDecline}) // gone, or the form refused it
	}
}

func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// newMCPEndpoint builds the aggregate MCP endpoint over a's gateways with
// the settings of opts (endpointOptions) and starts following the config;
// stop ends that and closes its sessions.
func newMCPEndpoint(ctx context.Context, a *app, opts mcpendpoint.Options) (ep *mcpendpoint.Endpoint, stop func()) {
	opts.Logger = a.logger
	opts.Version = version // serverInfo.version: what --version says, not "dev"
	opts.Agent = treeAgent{trees: a.trees, model: a.model, runs: &a.runs}
	if a.store != nil { // any replica reports on a task
		opts.Tasks = storeTasks{a.store}
	}
	if a.bus != nil { // PostgreSQL: replicas share the HTTP sessions
		opts.Sessions, opts.Relay = storeSessions{a.store}, a.bus
	}
	ep = mcpendpoint.New(discSource{a.disc}, &opts)
	a.mcp = ep
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		ep.Run(runCtx)
	}()
	return ep, func() {
		cancel()
		<-done
		_ = ep.Close(context.WithoutCancel(ctx)) // sessions only: nothing to report
	}
}

// cmdMCPServe serves the aggregate MCP endpoint over stdin and stdout, for
// clients that start a command; the user is ELYSIA_USER (default cli).
func cmdMCPServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, config := newFlags("mcp serve", stderr)
	dsn := fs.String("db", os.Getenv("ELYSIA_DATABASE_URL"), "database: a SQLite path or a postgres:// URL, - for none ("+dbFlagHelp+")")
	logLevel := fs.String("log-level", "warn", "debug, info, warn or error (the log goes to stderr)")
	logFormat := logFormatFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("mcp serve: unexpected argument %q", fs.Arg(0))
	}
	logger, err := newLogger(stderr, *logLevel, *logFormat)
	if err != nil {
		return err
	}
	logger = slog.New(requestMetaHandler{logger.Handler()}) // calls are logged with the user and MCP session
	epOpts, err := endpointOptions(os.LookupEnv)
	if err != nil {
		return usageErr("%v", err)
	}
	user := cliUser()
	// stdin carries the protocol: never prompt on it.
	a, err := newApp(ctx, appConfig{configPath: *config, dsn: *dsn, logger: logger})
	if err != nil {
		return err
	}
	defer a.close()
	if err := a.disc.Watch(); err != nil {
		logger.Warn("not watching the config file; edits need a restart", logKeyErr, err)
	}
	ep, stop := newMCPEndpoint(ctx, a, epOpts)
	defer stop()
	if err := ep.ServeStdio(ctx, os.Stdin, stdout, user); err != nil {
		return failure(fmt.Errorf("mcp serve: %w", err))
	}
	return nil
}

// renamed gives, by server, the tools the aggregate MCP endpoint lists
// under another name (web's /api/servers shows them); nil without one.
func (a *app) renamed() map[string]map[string]string {
	if a.mcp == nil {
		return nil
	}
	out := map[string]map[string]string{}
	for _, c := range a.mcp.Collisions() {
		if out[c.Server] == nil {
			out[c.Server] = map[string]string{}
		}
		out[c.Server][c.Tool] = c.Name
	}
	return out
}
