package mcpgateway

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sony/gobreaker/v2"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

var (
	_ tools.Tool         = (*Gateway)(nil)
	_ tools.StatusLiner  = (*Gateway)(nil)
	_ tools.Availability = (*Gateway)(nil)
)

// Gateway is one MCP server exposed as a single tools.Tool with the actions
// list and execute (DESIGN.md, "The gateway tool").
//
// It is the tool facade over the server's sessions: the Gateway holds what
// the model and the operator see (the circuit, call stats, draining, the
// description); its views hold a session owner (a session.Conn) and the
// tools listed on it, one shared or, for a per-user server, one per user
// (userpool.go). It connects lazily: nothing is spawned or dialled until
// the first call or Connect. All methods are safe for concurrent use. The
// owner calls Close once done; Close is idempotent.
type Gateway struct {
	cfg      mcpconfig.ServerConfig
	opts     Options
	logger   *slog.Logger        // masks the server's secrets in every record
	masker   func(string) string // cfg.Mask, built once: the server's secrets, no user's
	toolName string
	// description is what Description returns: set by New, replaced when a
	// listing brings tool names. Every tree render reads it for every
	// gateway, so it is an atomic load, not a turn at g.mu.
	description atomic.Pointer[string]

	// shared is the server's shared session owner and its tools.
	shared *view
	// wg owns the closes of the users' views and their reaper; Close
	// waits for it.
	wg sync.WaitGroup

	// copies are the server's copies, the server's own keys first, each
	// with its circuit (copies.go); one for a server without copies.
	// Fixed at construction; a breaker is never called with mu held.
	copies []*copyState
	// rr turns the round-robin rotation (copies.go).
	rr atomic.Uint64
	// stopProbe ends the prober of copies that are down; Close closes it.
	stopProbe chan struct{}
	// proberDue is set when New found a copy down: the first call starts
	// the prober.
	proberDue atomic.Bool

	// samples counts the server's sampling requests of the last minute,
	// shared by every view.
	samples *session.SampleWindow
	// handshake remembers, for the life of the gateway, whether the server
	// takes the 2025-11-25 initialize after server/discover, for every
	// user's session.
	handshake *session.Handshake

	// mu guards everything below. It is never held across I/O.
	mu        sync.Mutex
	stats     callStats
	closed    bool
	closeDone chan struct{}
	draining  bool          // Drain was called: enter admits nothing
	inflight  int           // calls admitted by enter and not yet left
	drained   chan struct{} // closed when inflight drops to 0 while draining
	// probing is set while the copies' prober runs (copies.go).
	probing bool
	// lastCircuit is the server's circuit as last told to the Observer.
	lastCircuit gobreaker.State
	// baseDescription is the description of the last listing, before
	// the note on copies that are down (setDescription).
	baseDescription string
	// users are the views of a per-user server, by user (userpool.go);
	// retiring, those out of users that close at their last release;
	// stopUsers ends their reaper; userSeq orders their use; userFreed,
	// when not nil, is closed when a user's view goes idle.
	users     map[string]*userView
	retiring  map[*userView]struct{}
	stopUsers chan struct{}
	userSeq   uint64
	userFreed chan struct{}

	// perUser is set when each user gets a session of their own: from
	// the config, or once the shared session met a sign-in.
	perUser atomic.Bool
	// userMask hides the secrets of the users' sessions of a server that
	// takes user secrets (${user:NAME}), on top of the server's own, in
	// g's log records only: what a user is shown is masked with their own
	// (maskFor). Set while g.mu is held, read without it.
	userMask atomic.Pointer[func(string) string]
	// childDialer, when set (by tests, before the first call), gives each
	// user's view the dialer that replaces its dial.
	childDialer func(c *session.Conn) func(hsCtx context.Context) (*session.Session, error)

	// pins is what the gateway knows of its tools' pins (pins.go).
	pins pinBook

	// watches are the resource subscribers of g's views (subscribe.go).
	watches watchBook
	// listsChanged counts the resources' and prompts' list_changed of g's
	// views (listchanged.go).
	listsChanged atomic.Uint64
}

// New returns a gateway for cfg. It does no I/O and starts no goroutine. A
// nil opts means the defaults; opts is copied.
func New(cfg mcpconfig.ServerConfig, opts *Options) *Gateway {
	o := opts.withDefaults()
	g := &Gateway{cfg: cfg, opts: o, toolName: mcpconfig.ToolName(cfg.Name), closeDone: make(chan struct{}), samples: &session.SampleWindow{},
		handshake: &session.Handshake{}, stopProbe: make(chan struct{})}
	mask := cfg.Masker()
	logMask := mask
	if cfg.TakesUserSecrets() {
		// The users' sessions fill in their own secrets and mask them in
		// what they report. What g shows a user is masked with that
		// user's secrets only (maskFor); the operator's log, with every
		// user's (peruser.go, remaskLocked).
		none := func(s string) string { return s }
		g.userMask.Store(&none)
		logMask = func(s string) string { return (*g.userMask.Load())(mask(s)) }
	}
	g.masker = mask
	g.logger = newMaskLogger(o.Logger, logMask).With(logKeyServer, cfg.Name)
	g.copies = g.newCopies(cfg)
	g.shared = g.newView(cfg, "", g.logger)
	g.perUser.Store(perUserStatic(cfg))
	g.downFromStart()
	g.setDescription(describe(cfg, nil, nil))
	return g
}

// Config returns the server's configuration as given to New, with the
// roots Adopt last set.
func (g *Gateway) Config() mcpconfig.ServerConfig {
	cfg := g.cfg
	cfg.Roots = g.shared.conns[0].Roots()
	return cfg
}

// Adopt takes cfg in place of the gateway's configuration when the two
// differ only in what a running session can be told about, and reports
// whether it did; otherwise the caller replaces the gateway. Today that is
// the roots: the new ones reach every open session of the server (the
// shared one and each user's) as notifications/roots/list_changed, and no
// session is closed.
func (g *Gateway) Adopt(cfg mcpconfig.ServerConfig) bool {
	cur := g.Config()
	probe := cfg
	probe.Roots = cur.Roots
	if !cur.Equal(probe) {
		return false
	}
	if slices.Equal(cur.Roots, cfg.Roots) {
		return true
	}
	g.mu.Lock()
	views := []*view{g.shared}
	for _, u := range g.users {
		views = append(views, u.v)
	}
	g.mu.Unlock()
	for _, v := range views {
		for _, c := range v.conns {
			c.SetRoots(cfg.Roots)
		}
	}
	return true
}

// Name returns the gateway's tool name, mcp_<server>.
func (g *Gateway) Name() string { return g.toolName }

// Description tells the model what the server is; once the tools have been
// listed, their names are appended.
func (g *Gateway) Description() string { return *g.description.Load() }

// describe returns the gateway's description, with the names of its listed
// tools appended when there are any. It is computed once per listing, since
// every tree render asks for it.
func describe(cfg mcpconfig.ServerConfig, names, offers []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "MCP server '%s' (%s) - provides access to multiple tools", cfg.Name, cfg.Transport)
	// sentence starts a new sentence, ending the previous one with a
	// period unless it already ends like a sentence (a configured
	// description often does).
	sentence := func(s string) {
		if !strings.HasSuffix(b.String(), ".") && !strings.HasSuffix(b.String(), "!") && !strings.HasSuffix(b.String(), "?") {
			b.WriteByte('.')
		}
		b.WriteByte(' ')
		b.WriteString(s)
	}
	if d := strings.TrimSpace(cfg.Description); d != "" {
		sentence(d)
	}
	var extra []string
	for _, o := range offers {
		if o != "tools" {
			extra = append(extra, o)
		}
	}
	if len(extra) > 0 {
		sentence(fmt.Sprintf("Also offers %s (actions %s)", strings.Join(extra, " and "), strings.Join(offerActions(extra), ", ")))
	}
	if len(names) > 0 {
		shown, more := describedNames(names)
		list := strings.Join(shown, ", ")
		if more > 0 {
			list += fmt.Sprintf(" and %d more (list with a query to find them)", more)
		}
		sentence("Tools: " + list)
	}
	return b.String()
}

// Inputs are action, tool_name, tool_inputs and query, then what the
// resource and prompt actions take (uri, name, arguments), in that order.
func (g *Gateway) Inputs() []tools.Input {
	return []tools.Input{
		{Name: "action", Type: "string", Default: "list", Enum: actions,
			Description: "'list' to see the server's tools and their input schemas, 'execute' to run one; " +
				"'list_resources' and 'read_resource' (with uri), 'list_prompts' and 'get_prompt' (with name and arguments) for a server that offers them"},
		{Name: "tool_name", Type: "string", Description: "the tool to run; required when action is execute"},
		{Name: "tool_inputs", Type: "object", Default: map[string]any{},
			Description: "the tool's inputs, matching its input schema"},
		{Name: "query", Type: "string",
			Description: "optional, with action list: words to find tools by name or description, best matches first"},
		{Name: "uri", Type: "string", Description: "with action read_resource: the resource's URI"},
		{Name: "name", Type: "string", Description: "with action get_prompt: the prompt's name"},
		{Name: "arguments", Type: "object", Description: "with action get_prompt: the prompt's arguments, as strings"},
	}
}

// actions are the gateway's actions, as its action input's enum.
var actions = []string{"list", "execute", "list_resources", "read_resource", "list_prompts", "get_prompt"}

// EndsRun is false: the model continues after a gateway call.
func (g *Gateway) EndsRun() bool { return false }

// StatusLine says what a call is about to do ("Running create_todo on todo...").
func (g *Gateway) StatusLine(args map[string]any) string {
	if a, _ := args["action"].(string); a == "execute" {
		if t, _ := args["tool_name"].(string); t != "" {
			return fmt.Sprintf("Running %s on %s...", t, g.cfg.Name)
		}
	}
	return fmt.Sprintf("Listing tools of %s...", g.cfg.Name)
}

// Available reports false, with the reason, while the server cannot be used:
// disabled, unresolved config, draining, in back-off after a crash loop, or
// with its circuit open (the reason says until when).
func (g *Gateway) Available(*tools.Environment) (bool, string) {
	g.mu.Lock()
	draining := g.draining && !g.closed
	g.mu.Unlock()
	if draining {
		return false, g.serverErr("unavailable", errDraining).Error()
	}
	if err := g.unavailable(); err != nil {
		return false, err.Error()
	}
	if cs := g.circuit(); cs.State == CircuitOpen {
		return false, g.circuitErr(cs).Error()
	}
	return true, ""
}

// Connect opens the session now instead of on first use (for "eager"
// servers). ctx bounds only the wait; the session belongs to the gateway.
func (g *Gateway) Connect(ctx context.Context) error {
	_, err := routed(ctx, g, func(v *view) (*session.Session, error) { return v.conns[v.listCopy()].Session(ctx) })
	return err
}

// Close ends every session and child process the gateway ever started,
// waits for every goroutine of the gateway, and makes in-flight and later
// calls fail saying the gateway is closed. It is idempotent, safe to call
// concurrently, and bounded by CloseGrace plus the transports' own
// shutdown: the users' sessions of a per-user server close in parallel.
func (g *Gateway) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		<-g.closeDone
		return nil
	}
	g.closed = true
	g.mu.Unlock()

	close(g.stopProbe)
	g.closeChildren()
	g.shared.close()
	g.wg.Wait()
	g.logger.Info("gateway closed")
	close(g.closeDone)
	return nil
}

// offerActions names the actions for what a server offers beyond tools.
func offerActions(offers []string) []string {
	var out []string
	for _, o := range offers {
		switch o {
		case "resources":
			out = append(out, "list_resources", "read_resource")
		case "prompts":
			out = append(out, "list_prompts", "get_prompt")
		}
	}
	return out
}
