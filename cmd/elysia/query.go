package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/elysia-go/elysia/tools"
)

// cmdQuery runs the agent on one query in the terminal, printing each event
// as it arrives (--json: the wire envelopes, one per line).
func cmdQuery(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs, config := newFlags("query", stderr)
	asJSON := fs.Bool("json", false, "print the event envelopes as JSON lines")
	user := fs.String("user", cliUser(), "user id: $ELYSIA_USER, else "+defaultUser+", the user of the web page and of /mcp on a keyless service too")
	conv := fs.String("conversation", "", "conversation id; with --db the conversation is saved and can be continued (default: a new one)")
	dsn := fs.String("db", "-", "database to save the conversation in (default: none)")
	pins := pinsFlag(fs, "pins", "with --db -, ")
	logLevel := fs.String("log-level", "warn", "debug, info, warn or error")
	logFormat := logFormatFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	query := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if query == "" {
		return usageErr(`query: want the query text, e.g. elysia query "list my todos"`)
	}
	logger, err := newLogger(stderr, *logLevel, *logFormat)
	if err != nil {
		return err
	}
	logger = slog.New(traceLogHandler{logger.Handler()})
	stopTracing, err := startTracing(ctx, os.LookupEnv, logger)
	if err != nil {
		return err
	}
	defer stopTracing() // last: the spans of closing go out too
	pinsDSN := ""
	if *dsn == "-" && *pins != "-" { // with --db, that database holds the pins
		if pinsDSN, err = databaseDSN(*pins, os.Getenv); err != nil {
			return err
		}
	}
	a, err := newApp(ctx, appConfig{configPath: *config, dsn: *dsn, pinsDSN: pinsDSN, logger: logger, interactive: true})
	if err != nil {
		return err
	}
	defer a.close()
	convID := *conv
	if convID == "" {
		convID = tools.NewID()
	}
	queryID := tools.NewID()
	ctx, span := startCommandSpan(ctx, "query", attribute.String("elysia.query_id", queryID))
	defer func() { endCommandSpan(span, err) }()
	c, err := a.trees.Conversation(ctx, *user, convID)
	if err != nil {
		return failure(err)
	}
	asker := newTerminalAsker(stderr)
	p := &eventPrinter{logger: logger, w: stdout, json: *asJSON, server: a.serverName, ask: func(env tools.Envelope) {
		if err := answerQuestion(ctx, env, asker, a.trees.Answer); err != nil {
			logger.Warn("answer a server's question", logKeyErr, err)
		}
	}}
	if err := c.Run(ctx, a.model, query, queryID, p.print); err != nil {
		return failure(err)
	}
	switch {
	case p.failed:
		return failure(fmt.Errorf("the run ended with an error"))
	case p.toolFailed:
		// The answer may explain the failure, but the work was not done.
		return failure(fmt.Errorf("the run's last tool call failed, and no later call gave a result"))
	}
	return nil
}

// eventPrinter writes events for a person (or as JSON lines). Its writes go
// to the terminal, so their errors are discarded: there is nowhere to report
// them, and the run's own result is what the exit status says.
type eventPrinter struct {
	logger *slog.Logger
	w      io.Writer
	json   bool
	failed bool
	// toolFailed: a tool call failed (self_healing_error) and no result
	// came after it.
	toolFailed bool
	// ask answers an elicitation event; nil declines by leaving it.
	ask func(tools.Envelope)
	// server names the server of a gateway's tool id (mcp_todo → todo) for
	// a person; nil, or "" for an id that is not a gateway's, keeps the id.
	server func(id string) string
}

func (p *eventPrinter) print(env tools.Envelope) {
	switch env.Type {
	case tools.EventError:
		p.failed = true
	case tools.EventSelfHealingError:
		p.toolFailed = true
	case tools.EventResult:
		p.toolFailed = false
	}
	if env.Type == tools.EventElicitation && p.ask != nil {
		defer p.ask(env) // after the event is printed
	}
	if p.json {
		b, err := tools.Marshal(env)
		if err != nil {
			p.logger.Error("marshal event", logKeyErr, err)
			return
		}
		// JSON escapes C0 controls; termJSON escapes what it leaves raw.
		_, _ = fmt.Fprintf(p.w, "%s\n", termJSON(b))
		return
	}
	// Everything below is the servers' and the model's text: each line is
	// printed without its controls (termText, termLine).
	var pl map[string]any
	_ = json.Unmarshal(env.Payload, &pl)
	switch env.Type {
	case tools.EventStatus:
		_, _ = fmt.Fprintf(p.w, "… %s\n", termLine(fmt.Sprint(pl["text"])))
	case tools.EventTreeUpdate:
		line := fmt.Sprintf("→ %v: %v", pl["node"], p.name(fmt.Sprint(pl["decision"])))
		if r, _ := pl["reasoning"].(string); r != "" {
			line += " (" + r + ")"
		}
		_, _ = fmt.Fprintln(p.w, termLine(line))
	case tools.EventResult:
		// The objects stay raw so they print in the server's key order.
		var res struct {
			Objects  []json.RawMessage `json:"objects"`
			Metadata struct {
				Server string `json:"server"`
				Action string `json:"action"`
			} `json:"metadata"`
		}
		_ = json.Unmarshal(env.Payload, &res)
		if res.Metadata.Action == "list" {
			// The catalogue is the model's business: one line for a person.
			_, _ = fmt.Fprintf(p.w, "▦ listed %d tools of %s\n", len(res.Objects), termLine(res.Metadata.Server))
			break
		}
		_, _ = fmt.Fprintf(p.w, "▦ %s result: %d object(s)\n", termLine(fmt.Sprint(pl["type"])), len(res.Objects))
		for i, o := range res.Objects {
			if i == 5 {
				_, _ = fmt.Fprintf(p.w, "    … %d more\n", len(res.Objects)-5)
				break
			}
			_, _ = fmt.Fprintf(p.w, "    %s\n", termLine(truncate(string(o), 200)))
		}
	case tools.EventSelfHealingError:
		_, _ = fmt.Fprintf(p.w, "! %s\n", termText(fmt.Sprintf("%v: %v", pl["error_message"], pl["feedback"])))
	case tools.EventWarning:
		_, _ = fmt.Fprintf(p.w, "warning: %s\n", termText(fmt.Sprint(pl["text"])))
	case tools.EventError:
		_, _ = fmt.Fprintf(p.w, "error: %s\n", termText(fmt.Sprint(pl["text"])))
	case tools.EventText:
		objs, _ := pl["objects"].([]any)
		for _, o := range objs {
			if m, ok := o.(map[string]any); ok {
				_, _ = fmt.Fprintf(p.w, "\n%s\n", termText(fmt.Sprint(m["text"])))
			}
		}
	case tools.EventTitle, tools.EventCompleted:
	}
}

// name is how a person knows the option id: a gateway by its server's
// name in mcp.json, anything else by its id.
func (p *eventPrinter) name(id string) string {
	if p.server != nil {
		if s := p.server(id); s != "" {
			return s
		}
	}
	return id
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// serverName is the mcp.json name of the server whose gateway's tool id is
// id (mcp_todo → todo), or "" when id is no gateway's.
func (a *app) serverName(id string) string {
	if !strings.HasPrefix(id, "mcp_") {
		return ""
	}
	for _, g := range a.disc.Gateways() {
		if g.Name() == id {
			return g.Config().Name
		}
	}
	return ""
}
