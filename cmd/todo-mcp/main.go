// Command todo-mcp is an MCP server that keeps a todo list. It offers the
// tools create_todo, list_todos, update_todo, search_todos and delete_todo
// over stdio (the default), streamable HTTP (--http ADDR, endpoint /mcp) or
// SSE (--sse ADDR, endpoints /sse and /message).
//
// Todos live in a SQLite file (TODO_DB, default ./data/todos.db) or, when
// TODO_DATABASE_URL is set, in PostgreSQL. Logs go to stderr: on stdio,
// stdout carries the protocol and nothing else.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// version is the server version reported to clients and by --version; the
// build may set it with -ldflags "-X main.version=...".
var version = "0.1.0"

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

const usageText = `todo-mcp - an MCP server that keeps a todo list

Usage:
  todo-mcp [flags]               serve over stdio (the default)
  todo-mcp --http 127.0.0.1:8765  serve streamable HTTP at http://ADDR/mcp
  todo-mcp --sse 127.0.0.1:8766   serve SSE at http://ADDR/sse (messages to /message)

Tools: create_todo, list_todos, update_todo, search_todos, delete_todo.

Flags:
  --http ADDR    serve streamable HTTP on ADDR (endpoint /mcp)
  --sse ADDR     serve the older HTTP+SSE transport on ADDR (endpoints /sse, /message)
  --version      print the version and exit
  -h, --help     print this help and exit

Flags for tests (fault injection):
  --fault-start-delay DURATION  wait this long (e.g. 2s) before serving
  --fault-garbage               stdio: write a line of non-JSON garbage to stdout before serving
  --fault-tools                 add a tool "fault" with input {"mode": "crash"|"hang"|"big", "size": N}:
                                crash exits with status 3 mid-call, hang blocks until the call is
                                cancelled, big returns N bytes of text (default 10 MiB)

Environment:
  TODO_DB            SQLite file (default ./data/todos.db; its folder is created)
  TODO_DATABASE_URL  PostgreSQL URL (postgres://...); when set, used instead of SQLite
  TODO_LOG_LEVEL     debug, info (default), warn or error; logs go to stderr
`

// config is what the command line and the environment ask for.
type config struct {
	HTTPAddr     string
	SSEAddr      string
	Version      bool
	StartDelay   time.Duration
	Garbage      bool
	FaultTools   bool
	SQLitePath   string
	PostgresURL  string
	LogLevel     slog.Level
	ShutdownWait time.Duration
}

// parseConfig reads flags from argv and settings from getenv. It returns
// flag.ErrHelp for -h and --help.
func parseConfig(argv []string, getenv func(string) string) (config, error) {
	cfg := config{SQLitePath: "./data/todos.db", ShutdownWait: 5 * time.Second}
	fs := flag.NewFlagSet("todo-mcp", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.HTTPAddr, "http", "", "")
	fs.StringVar(&cfg.SSEAddr, "sse", "", "")
	fs.BoolVar(&cfg.Version, "version", false, "")
	fs.DurationVar(&cfg.StartDelay, "fault-start-delay", 0, "")
	fs.BoolVar(&cfg.Garbage, "fault-garbage", false, "")
	fs.BoolVar(&cfg.FaultTools, "fault-tools", false, "")
	if err := fs.Parse(argv); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if cfg.HTTPAddr != "" && cfg.SSEAddr != "" {
		return cfg, errors.New("--http and --sse cannot be used together")
	}
	if cfg.StartDelay < 0 {
		return cfg, errors.New("--fault-start-delay must not be negative")
	}
	if p := getenv("TODO_DB"); p != "" {
		cfg.SQLitePath = p
	}
	cfg.PostgresURL = getenv("TODO_DATABASE_URL")
	if lvl := getenv("TODO_LOG_LEVEL"); lvl != "" {
		if err := cfg.LogLevel.UnmarshalText([]byte(lvl)); err != nil {
			return cfg, fmt.Errorf("TODO_LOG_LEVEL: %w", err)
		}
	}
	return cfg, nil
}

func main() {
	// A client that stops reading our stderr (mcp-go's stdio Close shuts the
	// pipe before it waits) must not turn the shutdown log line into a death
	// by SIGPIPE: with the signal ignored the write fails with EPIPE, the log
	// line is dropped and the exit status stays 0.
	signal.Ignore(syscall.SIGPIPE)
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit status.
func run(argv []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	cfg, err := parseConfig(argv, getenv)
	if errors.Is(err, flag.ErrHelp) {
		_, _ = fmt.Fprint(stdout, usageText) // nowhere left to report a failed write
		return exitOK
	}
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "todo-mcp: %v\n\n%s", err, usageText) // nowhere left to report a failed write
		return exitUsage
	}
	if cfg.Version {
		_, _ = fmt.Fprintln(stdout, "todo-mcp", version) // nowhere left to report a failed write
		return exitOK
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	slog.SetDefault(logger)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, cfg, logger, stdin, stdout); err != nil {
		logger.Error("todo-mcp stopped", logKeyErr, err)
		return exitFailure
	}
	return exitOK
}

// serve opens the store, waits out --fault-start-delay and serves on the
// chosen transport until ctx ends (or stdin closes, on stdio).
func serve(ctx context.Context, cfg config, logger *slog.Logger, stdin io.Reader, stdout io.Writer) error {
	if cfg.StartDelay > 0 {
		logger.Info("delaying start (--fault-start-delay)", "delay", cfg.StartDelay)
		t := time.NewTimer(cfg.StartDelay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil
		}
	}
	st, where, err := openConfiguredStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		if err := st.Close(); err != nil {
			logger.Warn("close database", logKeyErr, err)
		}
	}()
	logger.Info("database ready", "db", where)
	srv := newMCPServer(st, &serverOptions{Logger: logger, FaultTools: cfg.FaultTools})
	if cfg.Garbage && (cfg.HTTPAddr != "" || cfg.SSEAddr != "") {
		logger.Warn("--fault-garbage applies to stdio only; ignored")
	}
	switch {
	case cfg.HTTPAddr != "":
		return serveHTTP(ctx, logger, srv, cfg.HTTPAddr, false, cfg.ShutdownWait)
	case cfg.SSEAddr != "":
		return serveHTTP(ctx, logger, srv, cfg.SSEAddr, true, cfg.ShutdownWait)
	default:
		if cfg.Garbage {
			if _, err := io.WriteString(stdout, "this is not JSON-RPC: garbage from --fault-garbage\n"); err != nil {
				return fmt.Errorf("write garbage: %w", err)
			}
		}
		return serveStdio(ctx, logger, srv, stdin, stdout)
	}
}

// openConfiguredStore opens PostgreSQL when a URL is configured, else SQLite.
// It also returns a description of the database for the log, without secrets.
func openConfiguredStore(ctx context.Context, cfg config) (*sqlStore, string, error) {
	if cfg.PostgresURL != "" {
		if !strings.HasPrefix(cfg.PostgresURL, "postgres://") && !strings.HasPrefix(cfg.PostgresURL, "postgresql://") {
			return nil, "", errors.New("TODO_DATABASE_URL must be a postgres:// or postgresql:// URL")
		}
		st, err := openPostgres(ctx, cfg.PostgresURL)
		return st, "postgres", err
	}
	st, err := openSQLite(ctx, cfg.SQLitePath)
	return st, "sqlite " + cfg.SQLitePath, err
}
