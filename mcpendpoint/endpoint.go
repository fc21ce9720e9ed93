package mcpendpoint

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpendpoint/internal/catalog"
	"github.com/elysia-go/elysia/mcpendpoint/internal/drain"
	"github.com/elysia-go/elysia/mcpendpoint/internal/reqstate"
	"github.com/elysia-go/elysia/mcpendpoint/internal/sessionbook"
	"github.com/elysia-go/elysia/mcpendpoint/internal/sessions"
	"github.com/elysia-go/elysia/mcpendpoint/internal/tasks"
	"github.com/elysia-go/elysia/mcpgateway"
)

// Defaults of Options.
const (
	// DefaultListTimeout bounds each server's part of a tools/list.
	DefaultListTimeout = 5 * time.Second
	// DefaultSessionIdleTTL ends an HTTP session unused this long.
	DefaultSessionIdleTTL = 30 * time.Minute
	// DefaultMaxSessions bounds the open HTTP sessions; a new one past it
	// ends the least recently used. One user holds at most an eighth of
	// the bound (at least 64): past that, their own oldest ends.
	DefaultMaxSessions = 10000
	// DefaultDebounce is the quiet time before list_changed goes out; a
	// change reaches every session within about this long.
	DefaultDebounce = 250 * time.Millisecond
	// DefaultMaxBodyBytes caps one HTTP request body.
	DefaultMaxBodyBytes = 1 << 20
)

// DefaultResumeWait is how long a call whose stream nobody reads is kept
// for the client to resume before it is cancelled. A client resumes
// within the retry interval and its back-off (the TypeScript SDK's is
// about a second), but one that takes a dropped connection for a
// cancellation and sends no notifications/cancelled (mcp-go's HTTP
// client) has its call cancelled only this long after.
const DefaultResumeWait = 10 * time.Second

// storeTimeout bounds the store work of one request: the README's bound
// on a call of the store (store.DefaultCallTimeout), which the endpoint
// keeps whatever the request's own deadline.
const storeTimeout = 10 * time.Second

// protocolVersions are the versions served with sessions (2025-11-25 and
// older ones negotiated down): the versions of the session machinery
// (internal/sessions, the fast list of a session, initialize).
var protocolVersions = sessions.Versions

// servedVersions are every version the endpoint serves, newest first, on
// /mcp and over stdio (server/discover lists them): 2026-07-28, stateless
// (held.go), and protocolVersions.
var servedVersions = append([]string{mcp.ProtocolVersion20260728}, protocolVersions...)

// Options configures an Endpoint. A nil *Options means the defaults; New
// copies it.
type Options struct {
	// Logger receives warnings (servers left out of a list, collisions).
	// Nil means a discard logger.
	Logger *slog.Logger
	// ListTimeout bounds each server's part of a tools/list; a server
	// slower than that is left out of that list. Zero means
	// DefaultListTimeout.
	ListTimeout time.Duration
	// SessionIdleTTL ends an HTTP session unused this long. Zero means
	// DefaultSessionIdleTTL.
	SessionIdleTTL time.Duration
	// MaxSessions bounds the open HTTP sessions. Zero means
	// DefaultMaxSessions.
	MaxSessions int
	// Debounce is the quiet time before notifications/tools/list_changed
	// goes to every session after a change. Zero means DefaultDebounce.
	Debounce time.Duration
	// MaxBodyBytes caps one HTTP request body. Zero means
	// DefaultMaxBodyBytes (1 MiB).
	MaxBodyBytes int64
	// Version is the server version sent in initialize. "" means "dev".
	Version string
	// Agent, when set, answers the ask tool (Expose.Agent). Nil leaves
	// ask out whatever the config says.
	Agent Agent
	// Sessions, when set, shares the Streamable HTTP sessions with the
	// other replicas of the service (internal/sessions): any of them
	// serves a request of a session another opened; with Relay, so does
	// it the legacy SSE sessions' messages. Nil keeps them in this
	// process.
	Sessions SessionStore
	// ResumeWait is how long a tools/call on a resumable stream
	// (internal/sessions) whose stream nobody reads is kept for its
	// client to resume it before it is cancelled. Zero means
	// DefaultResumeWait.
	ResumeWait time.Duration
	// Relay, with Sessions, tells the other replicas that a session ended
	// here (DELETE); they call Receive with its messages. Nil leaves them
	// to find out within a quarter of SessionIdleTTL (at most a minute).
	Relay Relay
	// Replicas, with Sessions and Relay, keeps this replica's liveness
	// lease while Run runs (replicas.go), and tells a replica that is
	// slow to answer through the Relay from a gone one: a resume of a
	// call stream of the first gets 503 with Retry-After, of the second
	// 404; so does a 2026-07-28 retry relayed to the replica holding its
	// call (heldrelay.go). Nil takes a replica that does not answer
	// within resumeRelayWait for gone.
	Replicas Replicas
	// StateKey is the HMAC-SHA256 key that seals the requestState of a
	// 2026-07-28 call's input_required result (internal/reqstate); the
	// replicas of a service share it, so that any of them takes the
	// client's retry. Derive it from the service's secret for this use
	// alone; it is never logged. Empty means a random key of this
	// process: only this process opens its requestStates.
	StateKey []byte
	// InputWait is how long a 2026-07-28 call that asked its client
	// something waits for the retry with the answers before it is
	// cancelled. Zero means DefaultInputWait.
	InputWait time.Duration
	// MaxHeldCalls bounds the 2026-07-28 calls waiting for their
	// clients' answers at once; one user holds at most a sixteenth (at
	// least 8). Past it a question is declined. Zero means
	// DefaultMaxHeldCalls.
	MaxHeldCalls int
	// Tasks keeps the tasks of the Tasks extension (tasks.go) where every
	// replica reads them. Nil keeps them in this process.
	Tasks TaskStore
	// ListTTL is the ttlMs a 2026-07-28 client is given with a complete
	// tools/list (one that left a server out says when it is built
	// again). Zero means DefaultListTTL.
	ListTTL time.Duration
}

// SharedSession is an HTTP session of the endpoint as the replicas of the
// service share it.
type SharedSession = sessions.SharedSession

// SessionStore keeps the endpoint's HTTP sessions where every replica of
// the service reads them. It keeps a session under its id and user (a
// store should keep neither in clear: the id is a bearer of the session),
// and a session unused for idle is gone. Its errors match
// ErrUnknownSession when the session is missing, another user's, or idle
// too long. Its methods are safe for concurrent use.
type SessionStore = sessions.SessionStore

// Endpoint is the aggregate MCP endpoint. Create it with New, serve HTTP
// with ServeMCP and stdio with ServeStdio, follow the config with Run, and
// end the HTTP sessions with Close. It is safe for concurrent use.
type Endpoint struct {
	src      Source
	opts     Options
	logger   *slog.Logger
	srv      *mcpserver.MCPServer
	http     *mcpserver.StreamableHTTPServer
	sse      *mcpserver.SSEServer
	sessions *sessionbook.Book
	// hub is the 2025-11-25 session machinery across the replicas
	// (internal/sessions).
	hub *sessions.Hub
	// tag names this replica in the ids of its requests to clients
	// (internal/sessions) and in the requestStates it seals.
	tag string
	// storeWait bounds the store work of one request: storeTimeout.
	storeWait time.Duration
	// drain is the endpoint's part in a shutdown (drain.go).
	drain drain.State
	// held are the 2026-07-28 calls (held.go); sealer seals their
	// requestStates.
	held   *heldTable
	sealer reqstate.Sealer
	// info is serverInfo, encoded once.
	info []byte
	// tasks keeps the tasks (tasks.go); nudges wake the watchers of
	// those that run here, by task id, guarded by nudgeMu.
	tasks   TaskStore
	nudgeMu sync.Mutex
	nudges  map[string]chan struct{}

	// mu guards gen, cats, fp and collisions.
	mu         sync.Mutex
	gen        uint64 // bumped whenever fingerprint changes
	cats       map[string]*catalog.Catalog
	fp         [32]byte
	collisions []Collision
	// listsFP fingerprints the servers' resources and prompts list_changed
	// counts (listchanged.go); guarded by mu.
	listsFP [32]byte
	// hubRun runs the goroutines of hub that outlive a request (the ends
	// of sessions' subscriptions, evictions); Close waits for them.
	hubRun goGroup
}

// New returns an Endpoint over src. It does no I/O. mcp-go's HTTP
// transport starts its idle-session sweeper here; Close stops it.
func New(src Source, opts *Options) *Endpoint {
	if src == nil {
		panic("mcpendpoint.New: nil Source")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ListTimeout <= 0 {
		o.ListTimeout = DefaultListTimeout
	}
	if o.SessionIdleTTL <= 0 {
		o.SessionIdleTTL = DefaultSessionIdleTTL
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.Debounce <= 0 {
		o.Debounce = DefaultDebounce
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.ResumeWait <= 0 {
		o.ResumeWait = DefaultResumeWait
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.InputWait <= 0 {
		o.InputWait = DefaultInputWait
	}
	if o.MaxHeldCalls <= 0 {
		o.MaxHeldCalls = DefaultMaxHeldCalls
	}
	if o.ListTTL <= 0 {
		o.ListTTL = DefaultListTTL
	}
	e := &Endpoint{src: src, opts: o, logger: o.Logger.With("component", "mcpendpoint"), cats: map[string]*catalog.Catalog{}}
	e.held = newHeldTable()
	e.tasks, e.nudges = o.Tasks, map[string]chan struct{}{}
	if e.tasks == nil {
		e.tasks = tasks.NewMemStore()
	}
	e.opts.Tasks = nil // kept in tasks only
	e.sealer = reqstate.Sealer{Key: reqstate.NewKey(), Wait: o.InputWait}
	if len(o.StateKey) > 0 {
		e.sealer.Key = append([]byte(nil), o.StateKey...)
	}
	e.opts.StateKey = nil // kept in sealer only
	e.info = serverInfo(o.Version)
	e.sessions = sessionbook.New(o.MaxSessions, sessionbook.PerUser(o.MaxSessions), ErrUnknownSession,
		func(ev sessionbook.Eviction) { e.hub.EndEvicted(ev) })
	e.tag = sessions.NewReplicaTag()
	e.storeWait = storeTimeout
	e.hub = sessions.New(sessions.Config{
		Logger: e.logger, Book: e.sessions, Drain: &e.drain,
		Sessions: o.Sessions, Relay: o.Relay, Replicas: o.Replicas,
		SessionIdleTTL: o.SessionIdleTTL, ListTimeout: o.ListTimeout, ResumeWait: o.ResumeWait,
		RelayWait: resumeRelayWait, Tag: e.tag, StoreWait: e.storeWait,
		Publish:           e.publishSession,
		StreamPoll:        func() time.Duration { return e.src.Expose().StreamPoll },
		SubscribeUpstream: e.subscribeUpstream,
		Go:                e.hubRun.Go,
		WithBase:          withBase,
		Base:              baseOf,
	})

	hooks := &mcpserver.Hooks{}
	hooks.AddAfterListTools(e.afterListTools)
	hooks.AddBeforeCallTool(e.beforeCallTool)
	hooks.AddOnUnregisterSession(e.sessions.Unregistered)
	hooks.AddOnRequestInitialization(e.onRequest)
	hooks.AddAfterInitialize(e.sessions.Negotiated)
	e.hub.AddHooks(hooks)
	hooks.AddAfterListResources(e.afterListResources)
	hooks.AddAfterListResourceTemplates(e.afterListResourceTemplates)
	hooks.AddAfterListPrompts(e.afterListPrompts)
	hooks.AddBeforeGetPrompt(e.beforeGetPrompt)
	e.srv = mcpserver.NewMCPServer(serverName, o.Version,
		mcpserver.WithToolCapabilities(true),
		mcpserver.WithResourceCapabilities(true, true),
		mcpserver.WithPromptCapabilities(true),
		mcpserver.WithCompletions(),
		mcpserver.WithLogging(),
		mcpserver.WithPromptCompletionProvider(completions{e}),
		mcpserver.WithResourceCompletionProvider(completions{e}),
		mcpserver.WithHooks(hooks),
		mcpserver.WithRecovery(),
		mcpserver.WithExtensions(map[string]any{tasksExtension: map[string]any{}}),
		mcpserver.WithInstructions("Elysia: every MCP server of this service through one connection."),
	)
	e.srv.AddTool(mcp.Tool{Name: routerTool, InputSchema: mcp.ToolInputSchema{Type: "object"}}, e.route)
	e.srv.AddResourceTemplate(mcp.NewResourceTemplate(routerTemplate, routerPrompt), e.readResource)
	e.srv.AddPrompt(mcp.NewPrompt(routerPrompt), e.getPrompt)

	e.http = mcpserver.NewStreamableHTTPServer(e.srv,
		mcpserver.WithEndpointPath("/mcp"),
		mcpserver.WithSessionIdManagerResolver(e.sessions),
		mcpserver.WithSessionIdleTTL(o.SessionIdleTTL),
		mcpserver.WithStreamableHTTPProtocolVersions(servedVersions...),
		mcpserver.WithDisableLocalhostProtection(true), // web checks Host and Origin for every route
		mcpserver.WithStreamableHTTPLogger(e.logger),
		mcpserver.WithHeartbeatInterval(30*time.Second),
	)
	e.sse = mcpserver.NewSSEServer(e.srv,
		mcpserver.WithSSEEndpoint("/sse"),
		mcpserver.WithMessageEndpoint("/message"),
		mcpserver.WithSessionIDGenerator(e.hub.GenerateSSE),
		mcpserver.WithSSEDisableLocalhostProtection(true),
		mcpserver.WithKeepAliveInterval(30*time.Second),
	)
	e.hub.Attach(e.srv, e.http, e.sse)
	return e
}

// ServeStdio serves one client over in and out as user until ctx ends or
// in closes, at 2026-07-28 (its questions as input_required) or a
// version of protocolVersions, and no other. A read blocked on in when ctx ends returns when in delivers
// or closes.
func (e *Endpoint) ServeStdio(ctx context.Context, in io.Reader, out io.Writer, user string) error {
	s := mcpserver.NewStdioServer(e.srv)
	s.SetErrorLogger(slog.NewLogLogger(e.logger.Handler(), slog.LevelWarn))
	s.SetContextFunc(func(ctx context.Context) context.Context {
		// server/discover lists what the endpoint serves, not every version mcp-go knows.
		return mcpserver.WithSupportedProtocolVersions(mcpgateway.WithUser(ctx, user), servedVersions)
	})
	w := &lineWriter{w: out}
	pr, pw := io.Pipe()
	go e.splitStdio(mcpgateway.WithUser(ctx, user), user, in, pw, w)
	err := s.Listen(ctx, pr, w)
	_ = pr.Close() // the splitter's next line finds nobody reading
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// Run follows the source until ctx ends: when the tools a client would be
// listed may have changed (an mcp.json reload, a server's list_changed, a
// server connecting), it drops the cached lists and, after Debounce of
// quiet, sends notifications/tools/list_changed (and the resources' and
// prompts' list_changed) to every open session; so it does when a server
// says its resources or prompts changed. With Replicas, it also keeps
// this replica's liveness lease until ctx ends, and then drops it.
func (e *Endpoint) Run(ctx context.Context) {
	if e.opts.Replicas != nil {
		var wg sync.WaitGroup
		wg.Go(func() { e.keepLease(ctx) })
		defer wg.Wait()
	}
	c := make(chan struct{}, 1)
	if cn, ok := e.src.(CatalogNotifier); ok {
		cn.NotifyCatalog(c) // not after every call: each look costs a fingerprint
	} else {
		e.src.Notify(c)
	}
	defer e.src.Stop(c)
	e.changed() // the baseline
	e.listsMoved()
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	defer debounce.Stop()
	pending := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-c:
			tools, lists := e.changed(), e.listsMoved()
			if (tools || lists) && !pending {
				pending = true
				debounce.Reset(e.opts.Debounce)
			}
		case <-debounce.C:
			pending = false
			e.srv.SendNotificationToAllClients(string(mcp.MethodNotificationToolsListChanged), nil)
			e.srv.SendNotificationToAllClients(string(mcp.MethodNotificationResourcesListChanged), nil)
			e.srv.SendNotificationToAllClients(string(mcp.MethodNotificationPromptsListChanged), nil)
		}
	}
}

// changed reports whether the fingerprint moved, dropping the cached
// catalogs when it did.
func (e *Endpoint) changed() bool {
	fp := e.fingerprint()
	e.mu.Lock()
	defer e.mu.Unlock()
	if fp == e.fp {
		return false
	}
	e.fp = fp
	e.gen++
	clear(e.cats)
	return true
}

// Collisions returns the tools of the last listing that were listed under
// another name than their own because it was taken.
func (e *Endpoint) Collisions() []Collision {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Collision(nil), e.collisions...)
}

// Close ends every HTTP session here and stops the idle-session sweeper;
// open GET streams end, the calls still running are cancelled (the
// 2026-07-28 calls too, those waiting for their clients' answers among
// them), and the ended sessions' resource subscriptions are ended at
// their servers (each within ListTimeout). The sessions' records stay in the SessionStore,
// for the other replicas. A shutdown that lets calls finish first uses
// Drain, WaitCalls and StopCalls before it. It may be called more than
// once.
func (e *Endpoint) Close(ctx context.Context) error {
	e.CloseSessions(ctx)
	e.hub.StopStreams()
	e.held.close()
	err := errors.Join(e.http.Shutdown(ctx), e.sse.Shutdown(ctx))
	e.hubRun.Wait() // each bounded by ListTimeout
	e.hub.Close()
	return err
}

// CloseSessions ends every HTTP session here, with its open stream and
// the calls it runs, and every legacy SSE session; the endpoint still
// serves, and the sessions' records stay in the SessionStore. To stop
// without cutting calls short, see Drain.
func (e *Endpoint) CloseSessions(ctx context.Context) {
	e.http.CloseSessions(ctx)
	e.sse.CloseSessions()
}

// SessionID returns the MCP session id of a call the endpoint is serving,
// from its ctx, or "" outside one; logs name the session with it.
func SessionID(ctx context.Context) string {
	if s := mcpserver.ClientSessionFromContext(ctx); s != nil {
		return s.SessionID()
	}
	return ""
}
