package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

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
		return c.dialSSE(hsCtx)
	default:
		return c.dialHTTP(hsCtx)
	}
}

// dialStdio spawns the configured command. The process is started here,
// not by mcp-go: the child gets only ChildEnv (never the service's secrets),
// its own process group, and a stderr pipe the gateway reads; and its stdout
// reaches mcp-go's transport (NewIO) through a lineLimit, since mcp-go
// reads a line whole however long it is.
func (c *Conn) dialStdio(hsCtx context.Context) (*Session, error) {
	cfg := c.cfg
	if _, err := exec.LookPath(cfg.Command); err != nil {
		return nil, fmt.Errorf("command %q not found: %w", cfg.Command, errors.Unwrap(err))
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
	// The sniffer keeps the field order of forms, which mcp-go's maps lose.
	t := mcptransport.NewIO(&lineSniffer{r: out, line: s.orders.line}, p.stdin, nil)
	// An answer that meets the closed stdin at close is expected (closedwrite.go).
	mcptransport.WithCommandLogger(slog.New(closedWriteHandler{Handler: c.logger.Handler(), dead: s.dead}))(t)
	ctx, cancel := context.WithCancel(c.lifetime)
	client := mcpclient.NewClient(t, c.clientOptions(s)...)
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
// On the released protocol versions (the default) the standalone GET
// stream stays open: servers send list_changed, log messages and requests
// not tied to a call (elicitation, sampling, roots) on it. mcp-go's
// continuous listening opens it, and pins a legacy version, which is the
// point; a server that pins the 2026-07-28 draft has no such stream.
func (c *Conn) dialHTTP(hsCtx context.Context) (*Session, error) {
	s, err := c.dialStreamable(hsCtx, !mcp.IsModernProtocol(c.protocolVersion()))
	if errors.Is(err, mcptransport.ErrLegacySSEServer) {
		c.logger.Info("server answered like an SSE server; falling back to SSE")
		return c.dialSSE(hsCtx)
	}
	return s, err
}

// protocolVersion is the protocol version the gateway asks for: the
// server's protocol_version, else the newest released one.
func (c *Conn) protocolVersion() string {
	if c.cfg.ProtocolVersion != "" {
		return c.cfg.ProtocolVersion
	}
	return mcp.LATEST_LEGACY_PROTOCOL_VERSION
}

func (c *Conn) dialStreamable(hsCtx context.Context, listen bool) (*Session, error) {
	s := newSession(mcpconfig.TransportHTTP)
	s.httpClient = c.newHTTPClient(s)
	if err := c.adopt(s); err != nil {
		return nil, err
	}
	opts := []mcptransport.StreamableHTTPCOption{
		mcptransport.WithHTTPBasicClient(s.httpClient),
		mcptransport.WithHTTPLogger(c.logger),
	}
	if len(c.cfg.Headers) > 0 {
		opts = append(opts, mcptransport.WithHTTPHeaders(c.cfg.Headers))
	}
	if listen {
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
	return c.startRemote(hsCtx, s, mcpclient.NewClient(t, c.clientOptions(s)...))
}

func (c *Conn) dialSSE(hsCtx context.Context) (*Session, error) {
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
	return c.startRemote(hsCtx, s, mcpclient.NewClient(sseTransport{t}, c.clientOptions(s)...))
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
	s.listChanged = res.Capabilities.Tools != nil && res.Capabilities.Tools.ListChanged
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

// clientOptions are the handlers of server-initiated requests on s, and
// the capabilities they declare: elicitation (form and url), sampling and
// roots.
func (c *Conn) clientOptions(s *Session) []mcpclient.ClientOption {
	opts := []mcpclient.ClientOption{
		mcpclient.WithClientCapabilities(clientCapabilities()),
		mcpclient.WithElicitationHandler(elicitation{c: c, s: s}),
		mcpclient.WithSamplingHandler(sampling{c: c, s: s}),
		mcpclient.WithRootsHandler(roots{c: c}),
	}
	// The initialize handshake of the newest released version unless the
	// server pins one: mcp-go would otherwise probe for the 2026-07-28 draft
	// with server/discover first, which lenient servers answer with an
	// empty result, landing the session on a draft they do not speak
	// (the conformance suite's initialize and sse-retry). Older servers
	// negotiate down from it in the handshake.
	version := c.protocolVersion()
	return append(opts, mcpclient.WithProtocolVersion(version))
}

// notified dispatches a notification of s: progress and log messages are
// the conn's (they belong to calls in flight); the rest go to notify.
func (c *Conn) notified(s *Session, n mcp.JSONRPCNotification) {
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
