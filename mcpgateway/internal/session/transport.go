package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway/internal/stdiorpc"
	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// dial starts a session with the server. The transport is started with a ctx
// derived from the gateway's lifetime (never the caller's: the session
// outlives the call that opened it); hsCtx bounds only the handshake.
func (c *Conn) dial(hsCtx context.Context) (*Session, error) {
	if c.dialer != nil {
		return c.dialer(hsCtx)
	}
	switch c.cfg.Transport {
	case mcpconfig.TransportStdio:
		return c.dialStdio(hsCtx)
	case mcpconfig.TransportSSE:
		version := c.cfg.ProtocolVersion
		if version == "" {
			version = mcp.LATEST_LEGACY_PROTOCOL_VERSION
		}
		return c.dialSSE(hsCtx, version)
	default:
		return c.dialHTTP(hsCtx)
	}
}

// dialStdio spawns the configured command. The process is started here,
// not by mcp-go: the child gets only ChildEnv (never the service's secrets),
// its own process group, and a stderr pipe the gateway reads; and its stdout
// reaches the transport (stdiorpc) through a lineLimit, since the
// transport reads a line whole however long it is.
//
// Unless mcp.json pins a version, the handshake opens with server/discover
// (discover.go), and the server's answer is remembered. A child that dies
// on the probe without an answer (an older server that chokes on a method
// it does not know) is started again at once with initialize: a command
// that cannot start at all is therefore started twice, on the first
// connect of the process only.
func (c *Conn) dialStdio(hsCtx context.Context) (*Session, error) {
	version, probe := c.handshakeVersion()
	var p *discoverProbe
	if probe {
		p = &discoverProbe{}
	}
	s, err := c.spawn(hsCtx, version, p)
	if probe {
		switch outcome, _ := p.result(); {
		case err == nil && !mcp.IsModernProtocol(s.protocol):
			c.hs.setLegacy(true)
		case err != nil && outcome == probeNoAnswer && hsCtx.Err() == nil:
			c.logger.Info("server died on server/discover; starting it again with initialize", logKeyErr, err)
			c.hs.setLegacy(true)
			probe = false
			s, err = c.spawn(hsCtx, mcp.LATEST_LEGACY_PROTOCOL_VERSION, nil)
		}
	}
	if !probe && c.cfg.ProtocolVersion == "" && IsServerAnswer(err) {
		// The server refused initialize: it may speak only 2026-07-28
		// (now), so the next connect asks it again.
		c.hs.setLegacy(false)
	}
	return s, err
}

// spawn starts the child and opens a session on it at version, vetting
// server/discover with probe when probing (probe non-nil).
func (c *Conn) spawn(hsCtx context.Context, version string, probe *discoverProbe) (*Session, error) {
	cfg := c.cfg
	if err := lookCommand(cfg); err != nil {
		return nil, err
	}
	if cfg.Cwd != "" {
		if _, err := os.Stat(cfg.Cwd); err != nil {
			return nil, fmt.Errorf("cwd: %w", err)
		}
	}
	pipes, err := newStdioPipes()
	if err != nil {
		return nil, err
	}
	// Not exec.CommandContext: session.close owns the child's end (stdin
	// closed, then the whole process group signalled); a ctx-bound child
	// would get SIGKILL, the leader only, when the ctx ends. Pdeathsig
	// covers the gateway's own death.
	cmd := exec.Command(cfg.Command, cfg.Args...) //nolint:noctx // the session owns the child; see above
	cmd.Dir = cfg.Cwd
	cmd.Env = mcpconfig.ChildEnv(cfg, c.opts.LookupEnv)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pipes.stdinR, pipes.stdoutW, pipes.stderrW
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		pipes.closeAll()
		return nil, fmt.Errorf("start %q: %w", cfg.Command, err)
	}
	// The session owns the child before the conn knows it: a close that
	// runs from then on ends the child.
	p := pipes.process(cmd.Process.Pid, c.mask)
	s := newSession(mcpconfig.TransportStdio)
	s.proc = p
	c.goFunc(func() {
		_ = cmd.Wait()
		close(p.waited)
	})
	p.startDrain(&c.wg)
	if err := c.adopt(s); err != nil {
		return nil, err
	}
	if c.opts.OnProcessStart != nil {
		c.opts.OnProcessStart(p.pid)
	}
	out := &lineLimit{r: p.stdout, max: cfg.MessageLimit(), over: func(err error) {
		c.logger.Warn("server sent a message over max_message_size; closing the session", "limit", cfg.MessageLimit())
		s.MarkDead(err)
	}}
	stdio := stdiorpc.New(out, p.stdin, stdiorpc.Options{
		Logger: c.logger,
		// The field order of forms, which mcp-go's maps lose.
		Line: s.orders.sniff,
	})
	t := stdioProbe{Transport: stdio, probe: probe, hist: c.history, sess: s}
	ctx, cancel := context.WithCancel(c.lifetime)
	client := mcpclient.NewClient(t, c.clientOptions(s, version)...)
	if err := client.Start(ctx); err != nil {
		cancel()
		c.closeSession(s)
		return nil, fmt.Errorf("start %q: %w", cfg.Command, err)
	}
	if !s.attach(client, cancel) {
		// Closed meanwhile: close has ended the child, not the client.
		_ = client.Close()
		cancel()
		return nil, ErrClosed
	}
	// The child's death ends its stderr; the session dies with it.
	c.goFunc(func() {
		select {
		case <-p.exited:
			s.MarkDead(fmt.Errorf("process exited%s", p.ring.Tail()))
		case <-s.dead:
		}
	})
	if err := c.handshake(hsCtx, s); err != nil {
		c.closeSession(s)
		if errors.Is(s.deadErr, ErrMessageTooLarge) {
			err = s.deadErr
		}
		return nil, fmt.Errorf("%w%s", err, p.ring.Tail())
	}
	return s, nil
}

// dialHTTP connects over Streamable HTTP, falling back to SSE when the
// server answers the handshake's POST with a 4xx, as pre-2025-03-26 servers
// do (mcp-go reports that as ErrLegacySSEServer but does not fall back).
//
// Unless mcp.json pins a version, it probes with server/discover first
// (discover.go): a 2026-07-28 server's connection has no standalone GET
// stream (list changes come on subscriptions/listen, listen.go); any other
// server gets a 2025-11-25 session opened with mcp-go's continuous
// listening, which keeps the GET stream open: servers send list_changed,
// log messages and requests not tied to a call (elicitation, sampling,
// roots) on it, and the connect waits (up to a second) for the stream's
// answer before it returns (awaitGetStream). The answer is remembered, so
// later connects skip the probe.
func (c *Conn) dialHTTP(hsCtx context.Context) (*Session, error) {
	version, probe := c.handshakeVersion()
	if probe {
		s, err := c.dialStreamable(hsCtx, mcp.ProtocolVersion20260728, &discoverProbe{})
		if !errors.Is(err, errNotModern) || hsCtx.Err() != nil {
			return s, err
		}
		c.logger.Debug("server/discover: not a 2026-07-28 server; sending initialize", logKeyErr, err)
		version = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	}
	s, err := c.dialStreamable(hsCtx, version, nil)
	if errors.Is(err, mcptransport.ErrLegacySSEServer) {
		c.logger.Info("server answered like an SSE server; falling back to SSE")
		s, err = c.dialSSE(hsCtx, version)
	}
	if c.cfg.ProtocolVersion == "" {
		switch {
		case err == nil:
			c.hs.setLegacy(true)
		case !errors.Is(err, mcpauth.ErrSignInRequired):
			// The server may speak only 2026-07-28 now: the next
			// connect asks it again.
			c.hs.setLegacy(false)
		}
	}
	return s, err
}

// handshakeVersion returns the protocol version a connect asks for, and
// whether it probes with server/discover first: the server's
// protocol_version from mcp.json, never probed; else 2025-11-25 for a
// server known to take initialize (Handshake); else a probe.
func (c *Conn) handshakeVersion() (version string, probe bool) {
	switch {
	case c.cfg.ProtocolVersion != "":
		return c.cfg.ProtocolVersion, false
	case c.hs.Legacy():
		return mcp.LATEST_LEGACY_PROTOCOL_VERSION, false
	default:
		return mcp.ProtocolVersion20260728, true
	}
}

// dialStreamable opens a Streamable HTTP session at version, with the
// standalone GET stream before 2026-07-28, vetting server/discover with
// probe when probing (probe non-nil).
func (c *Conn) dialStreamable(hsCtx context.Context, version string, probe *discoverProbe) (*Session, error) {
	s := newSession(mcpconfig.TransportHTTP)
	s.httpClient = c.newHTTPClient(s)
	if err := c.adopt(s); err != nil {
		return nil, err
	}
	opts := []mcptransport.StreamableHTTPCOption{
		mcptransport.WithHTTPBasicClient(s.httpClient),
		mcptransport.WithHTTPLogger(slog.New(noListenHandler{c.logger.Handler()})),
	}
	if len(c.cfg.Headers) > 0 {
		opts = append(opts, mcptransport.WithHTTPHeaders(c.cfg.Headers))
	}
	listens := !mcp.IsModernProtocol(version)
	if listens {
		// Deprecated because it pins the legacy protocol, which is the
		// point: see dialHTTP.
		//lint:ignore SA1019 only used on legacy-protocol servers; see above
		opts = append(opts, mcptransport.WithContinuousListening()) //nolint:staticcheck // legacy-protocol servers only; see above
	}
	t, err := mcptransport.NewStreamableHTTP(c.cfg.URL, opts...)
	if err != nil {
		c.closeSession(s)
		return nil, err
	}
	s, err = c.startRemote(hsCtx, s, mcpclient.NewClient(&streamable{StreamableHTTP: t, probe: probe, hist: c.history, sess: s}, c.clientOptions(s, version)...))
	if err == nil && listens && !mcp.IsModernProtocol(s.protocol) {
		c.awaitGetStream(hsCtx, s)
	}
	return s, err
}

// getStreamWait bounds how long a connect waits for the answer to the
// standalone GET stream (awaitGetStream): a round trip on any working
// network, and a second's delay, once per Conn, where a server (or a proxy)
// holds the GET's headers back until it has something to send.
const getStreamWait = time.Second

// awaitGetStream waits, bounded by getStreamWait and ctx, until the
// standalone GET stream of the Streamable HTTP session s has its answer.
// mcp-go opens the stream in the background once initialize is answered,
// and a server may drop a message for the stream while it is not open (the
// TypeScript SDK's does, without an event store). A call sent at once
// would then race its own server's question: an elicitation that the
// server sent before the stream opened never arrives, and the call waits
// out its call_timeout. Waiting for the answer, whatever it is (opened,
// 405, an error), closes that race for one round trip per connect. A
// server that left a connect waiting out getStreamWait holds the GET's
// headers back: the Conn's later connects do not wait for it.
func (c *Conn) awaitGetStream(ctx context.Context, s *Session) {
	if c.getHeld.Load() {
		return
	}
	t := time.NewTimer(getStreamWait)
	defer t.Stop()
	select {
	case <-s.getAnswered:
	case <-t.C:
		c.getHeld.Store(true)
		c.logger.Info("the server sends no answer to the standalone GET stream until it has a message; connects no longer wait for it",
			"wait", getStreamWait)
	case <-ctx.Done():
	case <-s.dead:
	}
}

// dialSSE connects over the HTTP+SSE transport of the versions before
// 2025-03-26, asking for version.
func (c *Conn) dialSSE(hsCtx context.Context, version string) (*Session, error) {
	s := newSession(mcpconfig.TransportSSE)
	s.httpClient = c.newHTTPClient(s)
	if err := c.adopt(s); err != nil {
		return nil, err
	}
	connect, _ := c.cfg.Timeouts()
	opts := []mcptransport.ClientOption{
		mcptransport.WithHTTPClient(s.httpClient),
		mcptransport.WithSSELogger(c.logger),
		mcptransport.WithEndpointTimeout(connect),
	}
	if len(c.cfg.Headers) > 0 {
		opts = append(opts, mcptransport.WithHeaders(c.cfg.Headers))
	}
	t, err := mcptransport.NewSSE(c.cfg.URL, opts...)
	if err != nil {
		c.closeSession(s)
		return nil, err
	}
	return c.startRemote(hsCtx, s, mcpclient.NewClient(sseTransport{SSE: t, hist: c.history}, c.clientOptions(s, version)...))
}

func (c *Conn) startRemote(hsCtx context.Context, s *Session, client *mcpclient.Client) (*Session, error) {
	ctx, cancel := context.WithCancel(c.lifetime)
	if !s.attach(client, cancel) {
		cancel()
		return nil, ErrClosed
	}
	client.OnConnectionLost(func(err error) { s.MarkDead(fmt.Errorf("connection lost: %w", err)) })
	// Start runs on the session's ctx, which the SSE stream outlives Start
	// on; but mcp-go's SSE Start waits for the GET's dial and headers with
	// that ctx alone (sse.go:287), so the handshake's deadline ends it.
	stop := context.AfterFunc(hsCtx, cancel)
	err := client.Start(ctx)
	if !stop() {
		c.closeSession(s)
		return nil, fmt.Errorf("open the %s stream: no endpoint within connect_timeout: %w", s.transport, hsCtx.Err())
	}
	if err != nil {
		c.closeSession(s)
		return nil, &transportError{err}
	}
	if err := c.handshake(hsCtx, s); err != nil {
		c.closeSession(s)
		return nil, err
	}
	return s, nil
}

// handshake initializes the client and passes its notifications on.
func (c *Conn) handshake(ctx context.Context, s *Session) error {
	s.client.OnNotification(func(n mcp.JSONRPCNotification) { c.notified(s, n) })
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = clientInfo
	res, err := s.client.Initialize(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("initialize: %w (no answer to the handshake)", ctx.Err())
		}
		return fmt.Errorf("initialize: %w", err)
	}
	s.protocol = res.ProtocolVersion
	caps := res.Capabilities
	s.listChanged = caps.Tools != nil && caps.Tools.ListChanged
	s.listen = mcp.SubscriptionFilter{ToolsListChanged: s.listChanged,
		PromptsListChanged:   caps.Prompts != nil && caps.Prompts.ListChanged,
		ResourcesListChanged: caps.Resources != nil && caps.Resources.ListChanged}
	s.offers = offers(res.Capabilities)
	if c.cfg.LogLevel != "" && res.Capabilities.Logging != nil {
		req := mcp.SetLevelRequest{}
		req.Params.Level = mcp.LoggingLevel(c.cfg.LogLevel)
		// SetLevel is deprecated with the 2026-07-28 logging feature; on
		// the versions that have logging/setLevel it is the way to ask.
		//lint:ignore SA1019 see above
		if err := s.client.SetLevel(ctx, req); err != nil { //nolint:staticcheck // see above
			c.logger.Warn("logging/setLevel refused", "level", c.cfg.LogLevel, logKeyErr, err)
		}
	}
	return nil
}

// clientCapabilities are what the gateway's handlers answer: elicitation
// (form and url), sampling, and roots with list_changed. The handshake
// declares them, and so does every raw request on the 2026-07-28 core
// (conn.request), where a server decides per request what to offer.
func clientCapabilities() mcp.ClientCapabilities {
	return mcp.ClientCapabilities{
		Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}},
		Sampling:    &mcp.SamplingCapability{},
		Roots: &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{ListChanged: true},
	}
}

// clientOptions are the handlers of server-initiated requests on s (and of
// the input_required results of 2026-07-28, which mcp-go answers with the
// same handlers), the capabilities they declare (elicitation, form and url;
// sampling; roots) and the protocol version to ask for: a version before
// 2026-07-28 keeps mcp-go on initialize, without server/discover.
func (c *Conn) clientOptions(s *Session, version string) []mcpclient.ClientOption {
	connect, _ := c.cfg.Timeouts()
	return []mcpclient.ClientOption{
		mcpclient.WithClientCapabilities(clientCapabilities()),
		mcpclient.WithElicitationHandler(elicitation{c: c, s: s}),
		mcpclient.WithSamplingHandler(sampling{c: c, s: s}),
		mcpclient.WithRootsHandler(roots{c: c, s: s}),
		mcpclient.WithMaxInputRoundTrips(MaxInputRounds),
		mcpclient.WithDiscoverTimeout(discoverWait(connect)),
		mcpclient.WithProtocolVersion(version),
	}
}

// notified dispatches a notification of s: progress and log messages are
// the conn's (they belong to calls in flight); the rest go to notify.
func (c *Conn) notified(s *Session, n mcp.JSONRPCNotification) {
	c.notedInHistory(s, n)
	switch n.Method {
	case string(mcp.MethodNotificationProgress):
		c.progressed(s, n)
	case string(mcp.MethodNotificationMessage):
		c.logged(s, n)
	case string(mcp.MethodNotificationElicitationComplete):
		c.elicitationCompleted(s, n)
	default:
		if c.opts.Notify != nil {
			c.opts.Notify(s, n)
		}
	}
}

// offers says which of tools, resources and prompts a server offers.
func offers(caps mcp.ServerCapabilities) []string {
	var out []string
	if caps.Tools != nil {
		out = append(out, "tools")
	}
	if caps.Resources != nil {
		out = append(out, "resources")
	}
	if caps.Prompts != nil {
		out = append(out, "prompts")
	}
	return out
}

// lookCommand finds a stdio server's command as starting it would, and
// says plainly when it cannot.
func lookCommand(cfg mcpconfig.ServerConfig) error {
	if _, err := exec.LookPath(cfg.Command); err != nil {
		return fmt.Errorf("command %q not found: %w", cfg.Command, errors.Unwrap(err))
	}
	return nil
}
