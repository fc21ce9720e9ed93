package main

import (
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"log/slog"
	"net"
	"net/http"
	httppprof "net/http/pprof"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/tmc/langchaingo/llms"
	"golang.org/x/term"

	"github.com/elysia-go/elysia/cmd/elysia/internal/adapter"
	"github.com/elysia-go/elysia/discovery"
	"github.com/elysia-go/elysia/llm"
	"github.com/elysia-go/elysia/mcpendpoint"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/persist"
	"github.com/elysia-go/elysia/store"
	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web"
	"github.com/elysia-go/elysia/web/browsersafety"
	"github.com/elysia-go/elysia/web/elysiaapi"
	"github.com/elysia-go/elysia/web/signin"
	"github.com/elysia-go/elysia/web/stream"
	"github.com/elysia-go/elysia/web/ui"
)

// defaultShutdownGrace bounds how long running requests and streams get to
// finish once the service is asked to stop (--shutdown-grace).
const defaultShutdownGrace = 10 * time.Second

// maxShutdownNotice is the most of the grace period kept at its end to
// tell the streams still open that the service is stopping: their queries
// are cancelled, each stream gets an error event and completed, and every
// WebSocket a close frame (web.Server.Drain).
const maxShutdownNotice = 2 * time.Second

// shutdownNotice is the part of grace kept for telling the open streams:
// maxShutdownNotice, or a quarter of a shorter grace period.
func shutdownNotice(grace time.Duration) time.Duration {
	return min(maxShutdownNotice, grace/4)
}

// cmdServe runs the HTTP service until ctx ends (SIGINT or SIGTERM).
func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, config := newFlags("serve", stderr)
	addr := fs.String("addr", "127.0.0.1:8000", "address to listen on")
	dsn := fs.String("db", os.Getenv("ELYSIA_DATABASE_URL"), "database: a SQLite path or a postgres:// URL, - for none ("+dbFlagHelp+")")
	allowUnauth := fs.Bool("allow-unauthenticated", false, "allow binding a non-loopback address without API keys")
	var publicHosts hostsFlag
	fs.Var(&publicHosts, "public-host", "a host name (or host:port) the service answers to beside loopback ones, such as app.example.com; "+
		"repeatable or comma-separated, added to env ELYSIA_PUBLIC_HOSTS")
	frontendDir := fs.String("frontend", "", "serve a static build of Weaviate Elysia's frontend (its folder holding index.html and _next/) at /, /_next/* and /static/*")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error (a request served is logged at debug)")
	logFormat := logFormatFlag(fs)
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file, for go tool pprof (benchmarks)")
	pprofAddr := fs.String("pprof-addr", "", "serve Go's profiles (/debug/pprof/) on this loopback address, such as 127.0.0.1:6060, apart from the service; off by default")
	grace := fs.Duration("shutdown-grace", defaultShutdownGrace, "on SIGINT or SIGTERM, how long running queries get to finish; "+
		"the queries still running near its end are stopped, their streams told why, and every WebSocket closed with 1001")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("serve: unexpected argument %q", fs.Arg(0))
	}
	if *grace <= 0 {
		return usageErr("--shutdown-grace %s: want a positive duration, such as 10s", *grace)
	}
	browser, err := browserSettings(publicHosts)
	if err != nil {
		return err
	}
	logger, err := newLogger(stderr, *logLevel, *logFormat)
	if err != nil {
		return err
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return failure(err)
		}
		defer func() {
			if err := stop(); err != nil {
				logger.Warn("writing the CPU profile", logKeyErr, err)
			}
		}()
	}
	if *pprofAddr != "" {
		stop, err := startPprof(ctx, *pprofAddr)
		if err != nil {
			return err
		}
		defer stop()
	}
	// A gateway called through the API logs its calls with the request id
	// and user it finds in the request's ctx.
	logger = slog.New(traceLogHandler{requestMetaHandler{logger.Handler()}})
	slog.SetDefault(logger)
	stopTracing, err := startTracing(ctx, os.LookupEnv, logger)
	if err != nil {
		return err
	}
	defer stopTracing()          // last: the spans of shutdown go out too
	gin.SetMode(gin.ReleaseMode) // no debug route dump; gin is otherwise only used by web

	var frontend iofs.FS
	if *frontendDir != "" {
		if fi, err := os.Stat(filepath.Join(*frontendDir, "index.html")); err != nil || fi.IsDir() {
			return usageErr("--frontend %s: no index.html there; give the folder of an Elysia static build", *frontendDir)
		}
		// An os.Root serves what is inside the folder only: a symlink
		// that leads out of it does not open.
		root, err := os.OpenRoot(*frontendDir)
		if err != nil {
			return usageErr("--frontend %s: %v", *frontendDir, err)
		}
		defer func() { _ = root.Close() }() // a read-only folder: nothing to flush
		frontend = root.FS()
	}

	keys, err := apiKeys()
	if err != nil {
		return usageErr("%v", err)
	}
	if err := web.CheckBind(*addr, len(keys) > 0, *allowUnauth); err != nil {
		return usageErr("%v", err)
	}
	epOpts, err := endpointOptions(os.LookupEnv)
	if err != nil {
		return usageErr("%v", err)
	}

	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	app, err := newApp(ctx, appConfig{configPath: *config, dsn: *dsn, logger: logger, interactive: true,
		observer: adapter.NewGatewayMetrics(registry)})
	if err != nil {
		return err
	}
	defer app.close()
	registry.MustRegister(adapter.NewGatewayCollector(app.disc))
	if err := app.disc.Watch(); err != nil {
		logger.Warn("not watching the config file; edits need a restart", logKeyErr, err)
	}

	relay := app.relay() // before the endpoint, which shares its sessions through it
	if app.bus != nil {
		epOpts.Replicas = app.store // the replicas' liveness leases: slow is not gone
	}
	if app.store != nil {
		switch key, err := requestStateKey(app.store, os.Getenv("ELYSIA_SECRET_KEY")); {
		case errors.Is(err, store.ErrNoSecretKey):
			logger.Warn("ELYSIA_SECRET_KEY is not set: the MCP endpoint's 2026-07-28 retries are taken only by the replica that asked; " +
				"set it on every replica to base64 of 32 random bytes (openssl rand -base64 32)")
		case err != nil:
			return usageErr("%v", err)
		default:
			epOpts.StateKey = key
		}
	}
	mcpEP, stopMCP := newMCPEndpoint(ctx, app, epOpts)
	defer stopMCP()
	streams := app.streams(adapter.NewChanges(ctx, app.disc), relay)
	srv := web.New(app.deps(), &web.Options{
		MCP:            mcpEP,
		MCPUser:        cliUser(), // keyless: one user on every surface
		Logger:         logger,
		Keys:           keys,
		Registry:       registry,
		Assets:         ui.FS(),
		Ready:          app.ready,
		PublicHosts:    browser.PublicHosts,
		AllowedOrigins: browser.AllowedOrigins,
		Model:          web.ModelInfo{Provider: string(app.info.Provider), Model: app.info.Model, BaseURL: app.info.BaseURL},
		ConfigFile:     app.disc.Path(),
		Frontend:       frontend,
		PageUser:       cliUser(), // a browser opening / gets a conversation of this user
		Routes:         app.routes(streams),
	})
	stopRelay, err := app.startRelay(streams)
	if err != nil {
		return failure(err)
	}
	defer stopRelay()

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", *addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return usageErr("listen on %s: the address is in use (another elysia serve?): stop that process or choose another with --addr", *addr)
	}
	if err != nil {
		return failure(fmt.Errorf("listen on %s: %w", *addr, err))
	}
	// Requests are not cancelled by the signal itself: on shutdown, running
	// queries get the grace period to finish (see shutdown), then runCtx
	// ends the rest.
	runCtx, cancelRuns := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRuns()
	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return runCtx },
	}
	page := "http://" + ln.Addr().String() + "/tree/" + url.PathEscape(cliUser()) + "/first"
	logger.Info("listening", "addr", ln.Addr().String(), "url", page,
		"model", app.info.String(), "config", *config, "auth", len(keys) > 0)
	// Terminal output: a failed write has nowhere to be reported.
	_, _ = fmt.Fprintf(stdout, "Elysia-Go is serving on %s\n", page)

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return failure(fmt.Errorf("serve: %w", err))
	case <-ctx.Done():
	}
	shutdown(ctx, logger, hs, srv, mcpEP, &app.runs, *grace, cancelRuns)
	// Serve returns http.ErrServerClosed once Shutdown or Close starts.
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return failure(fmt.Errorf("serve: %w", err))
	}
	return nil
}

// mcpDrainer is the aggregate MCP endpoint's part in a shutdown
// (mcpendpoint.Endpoint's Drain, WaitCalls and StopCalls).
type mcpDrainer interface {
	Drain()
	WaitCalls(ctx context.Context) bool
	StopCalls(ctx context.Context) bool
}

// shutdown stops hs gracefully, within grace: running queries and MCP
// calls get all of it but its last part (shutdownNotice) to finish, then
// srv tells the streams still open (an error event and completed for each
// query, a 1001 close for each WebSocket) and mcp cancels the calls still
// running (each client gets an error saying the service stopped), then
// cancelRuns ends what is left. mcp's idle GET streams close at once; its
// sessions stay, for the other replicas to serve. ctx is the service's
// ctx, already ended by the signal.
func shutdown(ctx context.Context, logger *slog.Logger, hs *http.Server, srv *web.Server, mcp mcpDrainer, runs *runTracker, grace time.Duration, cancelRuns context.CancelFunc) {
	logger.Info("shutting down: letting running queries and MCP calls finish", "grace", grace)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	fctx, fcancel := context.WithTimeout(sctx, grace-shutdownNotice(grace))
	defer fcancel()
	mcp.Drain() // before Shutdown, which its GET streams would hold
	// Shutdown waits for plain requests and SSE streams; WebSocket queries
	// are hijacked connections, which the run tracker waits for, and an
	// MCP call whose client left waits on its stream for a resume, which
	// WaitCalls waits for.
	shut := make(chan error, 1)
	go func() { shut <- hs.Shutdown(sctx) }()
	if !runs.closeAndWait(fctx) {
		logger.Warn("shutdown: stopping the queries still running, telling their streams")
	}
	if !mcp.WaitCalls(fctx) {
		logger.Warn("shutdown: stopping the MCP calls still running, telling their clients")
	}
	stopped := make(chan bool, 1)
	go func() { stopped <- mcp.StopCalls(sctx) }()
	if err := srv.Drain(sctx); err != nil {
		logger.Warn("shutdown: closing the websockets still open", logKeyErr, err)
	}
	if !<-stopped {
		logger.Warn("shutdown: answers of MCP calls that no client took before the grace ended are lost")
	}
	if err := <-shut; err != nil {
		logger.Warn("shutdown: cancelling the requests still running", logKeyErr, err)
	}
	cancelRuns()
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer wcancel()
	runs.closeAndWait(wctx) // cancelled runs save what they have, then end
	_ = hs.Close()          // hijacked connections are not closed by Shutdown
}

// startCPUProfile profiles the process's CPU into the file at path until
// the returned func is called.
func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close() // the profile never started; its error is the one to report
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// startPprof serves net/http/pprof's handlers on addr, which must be a
// loopback address: profiles show the process's internals, so they get a
// listener of their own that the service's routes, keys and middleware
// never see, and that is only reachable from the host. stop closes it.
func startPprof(ctx context.Context, addr string) (stop func(), err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, usageErr("--pprof-addr %s: %v", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, usageErr("--pprof-addr %s: want a loopback address, such as 127.0.0.1:6060", addr)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, failure(fmt.Errorf("--pprof-addr: %w", err))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", httppprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", httppprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", httppprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", httppprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", httppprof.Trace)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }() // ends with Close: ErrServerClosed
	return func() { _ = hs.Close() }, nil
}

// hostsFlag is --public-host: repeatable, each value a comma-separated list.
type hostsFlag []string

func (f *hostsFlag) String() string { return strings.Join(*f, ",") }

func (f *hostsFlag) Set(v string) error {
	hosts, err := browsersafety.ParseHosts(v)
	if err != nil {
		return err
	}
	*f = append(*f, hosts...)
	return nil
}

// browserSettings gathers what web's browser safety checks need: the public
// hosts from --public-host and ELYSIA_PUBLIC_HOSTS, and the origins from
// ELYSIA_ALLOWED_ORIGINS. A bad entry is a usage error.
func browserSettings(flagHosts []string) (web.Options, error) {
	envHosts, err := browsersafety.ParseHosts(os.Getenv("ELYSIA_PUBLIC_HOSTS"))
	if err != nil {
		return web.Options{}, usageErr("ELYSIA_PUBLIC_HOSTS: %v", err)
	}
	origins, err := browsersafety.ParseOrigins(os.Getenv("ELYSIA_ALLOWED_ORIGINS"))
	if err != nil {
		return web.Options{}, usageErr("ELYSIA_ALLOWED_ORIGINS: %v", err)
	}
	return web.Options{PublicHosts: append(envHosts, flagHosts...), AllowedOrigins: origins}, nil
}

// apiKeys reads ELYSIA_API_KEYS or ELYSIA_API_KEYS_FILE.
func apiKeys() (map[string]string, error) {
	if v := os.Getenv("ELYSIA_API_KEYS"); v != "" {
		keys, err := web.ParseKeys(v)
		if err != nil {
			return nil, fmt.Errorf("ELYSIA_API_KEYS: %w", err)
		}
		return keys, nil
	}
	if p := os.Getenv("ELYSIA_API_KEYS_FILE"); p != "" {
		return web.LoadKeysFile(p)
	}
	return map[string]string{}, nil // no keys: authentication is off
}

// maxPromptBytes reads ELYSIA_MAX_PROMPT_BYTES, the byte budget of a
// decision prompt ([tree.Options.MaxPromptBytes]): unset, empty or 0 is
// the default (24 KiB), a negative number means no budget.
func maxPromptBytes(lookup func(string) (string, bool)) (int, error) {
	v, ok := lookup("ELYSIA_MAX_PROMPT_BYTES")
	if !ok || strings.TrimSpace(v) == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("ELYSIA_MAX_PROMPT_BYTES=%q: want a whole number of bytes (0: the default, 24 KiB; negative: no budget)", v)
	}
	return n, nil
}

// describeOptions reads ELYSIA_DESCRIBE_OPTIONS, whether the decision
// context describes each option in full ([tree.Options.DescribeOptions]):
// unset or empty, only when the provider's client sends the model no
// functions (info.SendsFunctions); a boolean (1, true, 0, false, ...)
// decides, for an OpenAI-compatible server that ignores functions.
func describeOptions(lookup func(string) (string, bool), info llm.Info) (bool, error) {
	v, ok := lookup("ELYSIA_DESCRIBE_OPTIONS")
	if !ok || strings.TrimSpace(v) == "" {
		return !info.SendsFunctions(), nil
	}
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return false, fmt.Errorf("ELYSIA_DESCRIBE_OPTIONS=%q: want true or false (unset: true only for ollama, whose client sends no functions)", v)
	}
	return b, nil
}

// appConfig says how to assemble the service's parts.
type appConfig struct {
	configPath string
	dsn        string // "" → the data folder's (databaseDSN); "-" → no store (memory only)
	// pinsDSN, with dsn "-", names a database opened for the pinned tools
	// alone, so that the gateways hold their lists against them as
	// elysia serve's do; "" means none.
	pinsDSN     string
	logger      *slog.Logger
	interactive bool // ask the terminal for inputs at start-up
	// observer receives every gateway's calls and circuit changes; nil
	// means none.
	observer mcpgateway.Observer
}

// app is the assembled service: model, store, trees and gateways.
type app struct {
	logger *slog.Logger
	model  llms.Model
	info   llm.Info
	store  *store.Store
	// pinStore holds the pinned tools alone when store is nil
	// (appConfig.pinsDSN); nil otherwise.
	pinStore *store.Store
	// persist is store's encoding of conversations; nil without a store.
	persist *persist.Store
	// secrets keeps users' own secrets (sealed in the store, or in memory
	// without one); signIns signs users in to servers through the web.
	secrets *adapter.UserSecrets
	signIns *adapter.SignIns
	trees   *tree.Manager
	disc    *discovery.Discovery
	// runs counts the queries in flight, so shutdown can wait for them.
	runs runTracker
	// mcp is the aggregate MCP endpoint, once newMCPEndpoint made it.
	mcp *mcpendpoint.Endpoint
	// bus is the relay between replicas (see relay); nil until then.
	bus *store.Bus
}

// newApp assembles the service. A bad mcp.json is a usage error (exit 2).
func newApp(ctx context.Context, c appConfig) (*app, error) {
	model, info, err := llm.FromEnv(ctx, os.LookupEnv, nil)
	if err != nil {
		return nil, usageErr("model: %v", err)
	}
	a := &app{logger: c.logger, model: model, info: info, secrets: &adapter.UserSecrets{}}
	topts := &tree.Options{Logger: c.logger, ModelName: info.Model, ModelProvider: string(info.Provider)}
	if topts.MaxPromptBytes, err = maxPromptBytes(os.LookupEnv); err != nil {
		return nil, usageErr("%v", err)
	}
	if topts.DescribeOptions, err = describeOptions(os.LookupEnv, info); err != nil {
		return nil, usageErr("%v", err)
	}
	gopts := &mcpgateway.Options{Logger: c.logger, Observer: c.observer, Sampler: modelSampler{model: model, name: info.Model}}
	gopts.UserSecrets = adapter.GatewaySecrets{Secrets: a.secrets}
	if err := perUserOptions(os.LookupEnv, gopts); err != nil {
		return nil, usageErr("%v", err)
	}
	if c.dsn == "-" && c.pinsDSN != "" {
		if a.pinStore, err = store.Open(ctx, c.pinsDSN, &store.Options{Logger: c.logger}); err != nil {
			return nil, failure(fmt.Errorf("open the database of the pinned tools: %w", err))
		}
		gopts.Pins = adapter.StorePins{Store: a.pinStore}
	}
	if c.dsn != "-" {
		maxConns, err := dbMaxConns(os.LookupEnv)
		if err != nil {
			return nil, usageErr("%v", err)
		}
		dsn, err := databaseDSN(c.dsn, os.Getenv)
		if err != nil {
			return nil, err
		}
		if a.store, err = store.Open(ctx, dsn, &store.Options{Logger: c.logger, MaxConns: maxConns}); err != nil {
			return nil, failure(fmt.Errorf("open the database: %w", err))
		}
		a.persist = persist.New(a.store)
		topts.Store, topts.Locker, topts.Profiles = a.persist, a.persist, a.persist
		gopts.Pins = adapter.StorePins{Store: a.store}
		switch vault, err := adapter.OpenVault(ctx, a.store, os.LookupEnv); {
		case errors.Is(err, store.ErrNoSecretKey):
			c.logger.Warn("ELYSIA_SECRET_KEY is not set: users' sign-ins and secrets are kept in memory only, " +
				"lost on restart and not shared by replicas; set it to base64 of 32 random bytes (openssl rand -base64 32)")
		case err != nil:
			a.close()
			return nil, usageErr("tokens and secrets: %v", err)
		default:
			a.secrets.Vault = vault
			gopts.Tokens, gopts.Pending = adapter.VaultTokens{Vault: vault}, adapter.VaultPending{Vault: vault}
		}
	}
	if gopts.Pending == nil {
		gopts.Pending = &mcpauth.MemoryPendingSignIns{} // shared by every gateway of this process
	}
	a.trees = tree.NewManager(topts)
	load := &mcpconfig.LoadOptions{Logger: c.logger}
	if c.interactive && term.IsTerminal(int(os.Stdin.Fd())) {
		load.Prompt = promptTerminal
	}
	a.disc = discovery.New(c.configPath, a.trees, &discovery.Options{
		Logger:  c.logger,
		Load:    load,
		Gateway: gopts,
	})
	a.signIns = adapter.NewSignIns(a.disc, gopts.Pending)
	if err := a.disc.Load(ctx); err != nil {
		a.close()
		if errors.Is(err, mcpconfig.ErrInvalidConfig) {
			return nil, &exitError{code: exitUsage, err: err}
		}
		return nil, failure(err)
	}
	return a, nil
}

func (a *app) deps() web.Deps {
	d := web.Deps{Trees: a.trees, Servers: adapter.NewServers(a.disc, a.renamed), Gallery: newGallery(a.disc.Path())}
	if a.persist != nil {
		d.Store, d.Feedback, d.Configs = a.persist, a.persist, a.persist
	}
	if a.info.Provider != llm.ProviderOffline {
		d.Model = adapter.TextModel{Model: a.model} // the offline planner answers with tool calls, not text
	}
	return d
}

// streams returns the query and event streams over the app's runner;
// changes and relay may be nil (see stream.Options).
func (a *app) streams(changes stream.Changes, relay stream.Relay) *stream.Streams {
	return stream.New(stream.Options{Runner: adapter.Runner{Trees: a.trees, Model: a.model, Runs: &a.runs}, Changes: changes, Relay: relay})
}

// routes are the route sets web serves beside its own: the streams, the
// sign-in routes and those of Elysia's frontend.
func (a *app) routes(st *stream.Streams) []web.RouteSet {
	return []web.RouteSet{st.Routes, signin.Routes(signin.Deps{SignIns: a.signIns, Secrets: a.secrets}), elysiaapi.Routes}
}

// ready reports whether the service can take traffic: the database answers
// and, with replicas, this one hears the others.
func (a *app) ready(ctx context.Context) error {
	if a.store == nil {
		return nil
	}
	if err := a.relayReady(); err != nil {
		return err
	}
	return a.store.Ping(ctx)
}

// close ends every gateway (and their processes), the model's connections
// (googleai holds gRPC ones) and the store.
func (a *app) close() {
	if c, ok := a.model.(io.Closer); ok {
		if err := c.Close(); err != nil {
			a.logger.Warn("closing the model client", logKeyErr, err)
		}
	}
	if a.disc != nil {
		if err := a.disc.Close(); err != nil {
			a.logger.Warn("closing gateways", logKeyErr, err)
		}
	}
	for _, s := range []*store.Store{a.store, a.pinStore} {
		if s == nil {
			continue
		}
		if err := s.Close(); err != nil {
			a.logger.Warn("closing the database", logKeyErr, err)
		}
	}
}

// requestStateKey derives the key that seals the aggregate MCP endpoint's
// 2026-07-28 requestStates (mcpendpoint.Options.StateKey) from the
// service's secret key, ELYSIA_SECRET_KEY's value (text) or the key file
// beside the SQLite database (store.Store.SecretKey), so that every
// replica opens what another sealed. HKDF-SHA256 with a label of its own
// keeps it apart from the key's other use, sealing tokens and secrets.
// A PostgreSQL store without text has no key: the error matches
// store.ErrNoSecretKey.
func requestStateKey(s *store.Store, text string) ([]byte, error) {
	secret, err := s.SecretKey(text)
	if err != nil {
		return nil, err
	}
	return hkdf.Key(sha256.New, secret, nil, "elysia mcpendpoint requestState", 32)
}
