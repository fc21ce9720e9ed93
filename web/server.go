package web

import (
	"cmp"
	"context"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web/browsersafety"
	"github.com/elysia-go/elysia/web/ui"
)

// DefaultHeartbeat is the idle interval after which a stream gets a
// heartbeat when Options.Heartbeat is zero.
const DefaultHeartbeat = 15 * time.Second

// DefaultStreamWriteTimeout bounds each write to a query stream when
// Options.StreamWriteTimeout is zero.
const DefaultStreamWriteTimeout = 30 * time.Second

// Deps are the services the routes need. Trees and Servers are required:
// New panics when one is nil.
type Deps struct {
	// Trees holds the trees and the conversations (and saves them).
	Trees *tree.Manager
	// Servers exposes the MCP servers.
	Servers Servers
	// Store keeps users and event logs. Nil means memory only: every user
	// is new and conversations reopen without their event log.
	Store Store
	// Feedback keeps ratings of answers (the /feedback routes). Nil means
	// none: adding feedback is refused with 503.
	Feedback FeedbackStore
	// Configs keeps users' named configs (Elysia's Settings page); the
	// default one's agent description, style and end goal reach the
	// user's decisions through the tree's Profiles. Nil means none: the
	// config routes show the service's defaults and save nothing.
	Configs ConfigStore
	// Model writes the follow-up suggestions. Nil means they are built
	// from the conversation's tools and results without a model (as with
	// the offline planner).
	Model TextModel
	// Gallery finds servers in an MCP registry and adds them to mcp.json
	// (the panel's "Add a server"). Nil means none: its routes answer 404.
	Gallery Gallery
}

// Options configures a Server. A nil *Options means the defaults; New copies
// it, so later changes have no effect.
type Options struct {
	// Logger receives the access log and the details of failed requests;
	// each record gets the request id. Nil means a discard logger.
	Logger *slog.Logger
	// Keys maps API keys to user ids ("*" for an admin key), as returned by
	// ParseKeys or LoadKeysFile. Nil or empty means no authentication: every
	// route is open (see CheckBind). The map is copied.
	Keys map[string]string
	// Registry receives the HTTP metrics and is served on /metrics. Nil
	// means a private registry holding only the HTTP metrics.
	Registry *prometheus.Registry
	// Ready reports whether the service can take traffic, for /readyz; its
	// error is logged, never shown. Its ctx ends after 2 s, and a check
	// that has not answered by then is not ready. Nil means always ready.
	Ready func(ctx context.Context) error
	// Assets holds the web UI's files (index.html, app.js, style.css, ...)
	// at its root; they are served under /ui/, and index.html for a
	// browser's GET /tree/:user_id/:conversation_id. Nil means the embedded
	// UI of package web/ui.
	Assets fs.FS
	// Heartbeat is the idle interval after which streams get a heartbeat
	// (an SSE comment, a WebSocket ping), on web's routes and those of the
	// route sets (Kit.Heartbeat). Zero means DefaultHeartbeat.
	Heartbeat time.Duration
	// StreamWriteTimeout bounds each write to a stream (Kit.WriteTimeout):
	// every event (SSE and WebSocket) and every SSE heartbeat; a WebSocket
	// ping is bounded by its wait for the pong instead (twice Heartbeat,
	// at least 5 s). The HTTP server sets no write timeout, since streams
	// are long, so without this a client that stops reading but keeps its
	// connection open would block its stream once the socket buffers fill,
	// and keep its run, and so its conversation, busy until TCP gives up.
	// A write that misses the deadline ends the stream as a client
	// disconnecting does. Zero or less means DefaultStreamWriteTimeout
	// (30 s).
	StreamWriteTimeout time.Duration
	// MaxBodyBytes limits request bodies and WebSocket messages. Zero means
	// DefaultMaxBodyBytes (1 MiB).
	MaxBodyBytes int64
	// BodyReadTimeout bounds how long a request's body may take to arrive,
	// from the end of its headers: a client that sends part of a body and
	// stalls gets 408 and its connection closed instead of holding it. Zero
	// or less means DefaultBodyReadTimeout (30 s).
	BodyReadTimeout time.Duration
	// PublicHosts lists the host names and addresses, each with an optional
	// port, that the service answers to beside the loopback ones
	// (localhost, *.localhost, 127.0.0.0/8, ::1), as browsersafety.ParseHosts returns them
	// (--public-host, ELYSIA_PUBLIC_HOSTS); entries it would refuse
	// are ignored. Without Keys, a request whose Host is neither loopback
	// nor listed gets 403, so that a DNS-rebinding page cannot reach the
	// service under its own name; with Keys the check applies only when
	// the list is not empty (a keyed service behind a proxy needs nothing).
	// Nil means loopback only without keys, no check with keys.
	PublicHosts []string
	// Frontend holds a static build of Weaviate Elysia's own frontend
	// (index.html and _next/ at its root), served at /, /_next/* and
	// /static/* as Elysia serves it (elysia serve --frontend DIR). Only
	// its regular files are served, never a dotfile or anything under a
	// dot folder; it must not follow links out of its folder (cmd gives an
	// os.Root's FS). Nil means none: the project's UI at /tree/... is the
	// only one.
	Frontend fs.FS
	// Model names the model making the decisions, shown in the user
	// config. The zero value shows empty names.
	Model ModelInfo
	// ConfigFile is the path of the mcp.json in use, shown in the user
	// config. "" shows none.
	ConfigFile string
	// AllowedOrigins lists the origins, beside the service's own, from
	// which a web page may send a state-changing request (POST, PUT, PATCH,
	// DELETE) or open the WebSocket, as browsersafety.ParseOrigins returns them
	// (ELYSIA_ALLOWED_ORIGINS): full origins or host patterns; entries
	// it would refuse are ignored. Requests without an Origin
	// header (curl, the CLI) are not affected; "null" is never allowed.
	// Nil means the service's own origin only.
	AllowedOrigins []string
	// PageUser is the user whose new conversation a browser opening /
	// is sent to (/tree/<PageUser>/<new id>), when no Frontend takes /.
	// "" means DefaultPageUser.
	PageUser string
	// MCP serves the aggregate MCP endpoint at /mcp, /sse and /message.
	// Nil means none: those paths answer 404.
	MCP MCPEndpoint
	// MCPUser is the MCP session's user on a keyless service (and with an
	// admin key) when the request names none in X-Elysia-User. "" means
	// "cli".
	MCPUser string
	// Routes are the route sets of the packages on top of web (the query
	// and event streams, web/stream; sign-in, web/signin; the routes of
	// Elysia's frontend, elysiaapi.Routes), registered in order after
	// web's own routes. Nil means web's own routes only.
	Routes []RouteSet
}

// Server is the HTTP API. It holds no per-request state and is safe for
// concurrent use; it starts no goroutines of its own (streams run on their
// request's goroutine and end with it).
type Server struct {
	deps      Deps
	logger    *slog.Logger
	keys      keyring
	registry  *prometheus.Registry
	ready     func(ctx context.Context) error
	assets    fs.FS
	heartbeat time.Duration
	maxBody   int64
	// bodyWait is Options.BodyReadTimeout, defaulted.
	bodyWait time.Duration
	// guard runs the browser safety checks (Options.PublicHosts and
	// Options.AllowedOrigins).
	guard  *browsersafety.Guard
	engine *gin.Engine
	// writeTimeout is Options.StreamWriteTimeout, defaulted.
	writeTimeout time.Duration
	// drain knows the queries and sockets to tell of a shutdown (Drain).
	drain drainer
	// frontend is Options.Frontend.
	frontend fs.FS
	// model and configFile are Options.Model and Options.ConfigFile.
	model      ModelInfo
	configFile string
	// pageUser is Options.PageUser, defaulted.
	pageUser string
	// mcp and mcpUser are Options.MCP and Options.MCPUser, defaulted.
	mcp     MCPEndpoint
	mcpUser string
	// routeSets is Options.Routes.
	routeSets []RouteSet
	// watchers are told of the changes made through the routes (Kit.Watch);
	// set while the route sets are added, in New, and read-only after.
	watchers []func(Change)
}

// New returns a Server for deps. It panics if a dependency is nil, which is
// a programming error. It does no I/O.
func New(deps Deps, opts *Options) *Server {
	switch {
	case deps.Trees == nil:
		panic("web.New: nil Deps.Trees")
	case deps.Servers == nil:
		panic("web.New: nil Deps.Servers")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	if o.Assets == nil {
		o.Assets = ui.FS()
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.StreamWriteTimeout <= 0 {
		o.StreamWriteTimeout = DefaultStreamWriteTimeout
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.BodyReadTimeout <= 0 {
		o.BodyReadTimeout = DefaultBodyReadTimeout
	}
	s := &Server{
		deps:      deps,
		logger:    slog.New(ctxHandler{o.Logger.Handler()}).With("component", "web"),
		keys:      newKeyring(o.Keys),
		registry:  o.Registry,
		ready:     o.Ready,
		assets:    o.Assets,
		heartbeat: o.Heartbeat,
		maxBody:   o.MaxBodyBytes,
		bodyWait:  o.BodyReadTimeout,
		guard:     browsersafety.New(len(o.Keys) == 0, o.PublicHosts, o.AllowedOrigins),

		writeTimeout: o.StreamWriteTimeout,
		frontend:     o.Frontend,
		model:        o.Model,
		configFile:   o.ConfigFile,
		pageUser:     cmp.Or(o.PageUser, DefaultPageUser),
		routeSets:    o.Routes,
		mcp:          o.MCP,
		mcpUser:      o.MCPUser,
	}
	if s.mcpUser == "" {
		s.mcpUser = "cli"
	}
	s.engine = s.routes(newHTTPMetrics(o.Registry))
	return s
}

// Handler returns the http.Handler serving every route. It is the same
// handler on every call.
func (s *Server) Handler() http.Handler { return s.engine }

// routes builds the gin engine.
func (s *Server) routes(m *httpMetrics) *gin.Engine {
	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	e.Use(s.bodyDeadline, securityHeaders, requestIDMiddleware, traceMiddleware, m.middleware, s.accessLog, s.recovery, s.browserGuard, s.watch)
	e.NoRoute(func(c *gin.Context) {
		s.fail(c, &requestError{http.StatusNotFound, "no route for " + c.Request.Method + " " + c.Request.URL.Path}, nil)
	})
	e.NoMethod(func(c *gin.Context) {
		s.fail(c, &requestError{http.StatusMethodNotAllowed, "method " + c.Request.Method + " not allowed on " + c.Request.URL.Path}, nil)
	})

	// Open routes.
	// Probes also answer HEAD, which load balancers and uptime checkers use.
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		e.Handle(method, "/healthz", s.healthz)
		e.Handle(method, "/readyz", s.readyz)
	}
	e.GET("/ui/*filepath", s.uiAsset)
	e.HEAD("/ui/*filepath", s.uiAsset)
	// The page shell is open; its JSON needs the user's key (checked inside).
	e.GET("/tree/:user_id/:conversation_id", s.getTree)

	e.GET("/metrics", s.requireAdmin, metricsHandler(s.registry))

	e.POST("/init/user/:user_id", s.requireUser, s.initUser)
	e.POST("/init/tree/:user_id/:conversation_id", s.requireUser, s.initTree)
	e.GET("/tools/available", s.requireKey, s.availableTools)
	for _, k := range treeOpKinds {
		e.POST("/tools/:user_id/"+k.path, s.requireUser, s.treeOp(k.kind))
	}

	e.GET("/conversations/:user_id", s.requireUser, s.listConversations)
	e.GET("/conversations/:user_id/:conversation_id", s.requireUser, s.getConversation)
	e.DELETE("/conversations/:user_id/:conversation_id", s.requireUser, s.deleteConversation)

	for _, add := range s.routeSets {
		add(&Kit{s: s, e: e})
	}
	s.frontendRoutes(e)
	s.mcpRoutes(e)
	s.pageRoutes(e)

	e.GET("/api/servers", s.requireKey, s.listServers)
	e.POST("/api/servers/:name/list", s.requireKey, s.serverList)
	e.POST("/api/servers/:name/execute", s.requireKey, s.serverExecute)
	e.POST("/api/servers/:name/resources", s.requireKey, s.serverResources)
	e.POST("/api/servers/:name/resources/read", s.requireKey, s.serverReadResource)
	e.POST("/api/servers/:name/prompts", s.requireKey, s.serverPrompts)
	e.POST("/api/servers/:name/prompts/get", s.requireKey, s.serverGetPrompt)
	e.POST("/api/servers/:name/complete", s.requireKey, s.serverComplete)
	e.GET("/api/servers/:name/logs", s.requireKey, s.serverLogs)
	e.GET("/api/servers/:name/history", s.requireKey, s.serverHistory)
	e.POST("/api/servers/:name/pins", s.requireAdmin, s.serverPins)
	e.GET("/api/registry/servers", s.requireAdmin, s.registrySearch)
	e.POST("/api/registry/servers", s.requireAdmin, s.registryAdd)
	return e
}

func (s *Server) healthz(c *gin.Context) {
	writeJSON(c, http.StatusOK, ok(kv("status", "ok")))
}

// readyTimeout bounds a readiness check: a database that takes longer to
// answer is not ready.
const readyTimeout = 2 * time.Second

func (s *Server) readyz(c *gin.Context) {
	if s.ready != nil {
		ctx, cancel := context.WithTimeout(c.Request.Context(), readyTimeout)
		err := s.ready(ctx)
		cancel()
		if err != nil {
			s.logger.WarnContext(c.Request.Context(), "not ready", slog.Any(logKeyErr, err))
			writeJSON(c, http.StatusServiceUnavailable, object{kv("error", "not ready"), kv("status", "not_ready")})
			return
		}
	}
	writeJSON(c, http.StatusOK, ok(kv("status", "ready")))
}
