package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway/internal/stdiorpc"
	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
)

// How the gateway opens a session (DESIGN.md, "Protocol versions"): unless
// mcp.json pins protocol_version, with server/discover at 2026-07-28. A
// server that names 2026-07-28 and nothing older gets a 2026-07-28
// connection, the discover being its whole handshake. Any other answer
// (an error, a 404, no answer, or a list that also names an older version)
// gets the 2025-11-25 initialize at once: on stdio mcp-go sends it on the
// same process; over HTTP the gateway dials again, because only a session
// opened with continuous listening has the standalone GET stream. The
// answer is remembered (Handshake), so that only the first connect of the
// process pays the extra round trip.
//
// A server that offers both versions stays on 2025-11-25, measured: every
// mcp-go (v1.2) server advertises 2026-07-28 by default, yet its
// RequestElicitation and RequestSampling refuse a 2026-07-28 client
// (ErrServerInitiatedRequestUnsupported), and its resource subscriptions
// and list_changed need subscriptions/listen; with the dual-era servers on
// 2026-07-28, nine of mcpgateway's tests failed (elicitation over HTTP,
// tools/list_changed, resource subscriptions) and one hung. Until the
// gateway has the Tasks extension and resource subscriptions on
// subscriptions/listen (issue 25), 2026-07-28 is for the servers that speak
// nothing else, and for those mcp.json pins it for.

// MaxInputRounds is how many times a request (tools/call, prompts/get,
// resources/read) is sent on a 2026-07-28 connection while the server keeps
// answering input_required: the questions of each round are answered (the
// user, the model, the roots) and the request sent again, and past this the
// call fails.
const MaxInputRounds = 8

// maxDiscoverWait bounds the wait for an answer to server/discover; a
// quarter of connect_timeout if that is less. Past it the server is taken
// not to know the method (some older stdio servers ignore what they do not
// know), and initialize goes out.
const maxDiscoverWait = 5 * time.Second

// discoverWait returns how long a probe waits for server/discover within
// connect, leaving the initialize after it most of the handshake's time.
func discoverWait(connect time.Duration) time.Duration {
	return min(maxDiscoverWait, connect/4)
}

// Handshake remembers, for one server and the life of the process, that it
// took the 2025-11-25 initialize after server/discover: later connects, of
// any user, send initialize at once. The zero value remembers nothing. It
// is safe for concurrent use; a Gateway shares one between every Conn of
// its server.
type Handshake struct {
	legacy atomic.Bool
}

// Legacy reports whether the server is known to take initialize.
func (h *Handshake) Legacy() bool { return h.legacy.Load() }

func (h *Handshake) setLegacy(v bool) { h.legacy.Store(v) }

// errNotModern is the answer to the initialize mcp-go falls back to on a
// probe over HTTP, which the gateway sends itself on a new connection.
var errNotModern = errors.New("not a 2026-07-28 server")

// probeOutcome is what a probe's server/discover got.
type probeOutcome int

const (
	probeNone     probeOutcome = iota // not sent
	probeModern                       // names 2026-07-28 and nothing older
	probeOlder                        // an answer, but not probeModern's
	probeNoAnswer                     // a transport error, a timeout, a dead child
)

// discoverProbe vets a connection's answers to server/discover. mcp-go
// (v1.2.1, client/protocol.go:288) takes any successful discover as
// 2026-07-28 without reading supportedVersions, so a lenient older server
// that answers an unknown method with {} would be spoken to in a version it
// does not know; the probe turns every answer that is not probeModern into
// an error, and mcp-go then falls back to initialize. It is safe for
// concurrent use.
type discoverProbe struct {
	mu      sync.Mutex
	outcome probeOutcome
	err     error // the discover's own error, when it got no answer
}

func (p *discoverProbe) set(o probeOutcome, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.outcome, p.err = o, err
}

// result returns what the last server/discover got.
func (p *discoverProbe) result() (probeOutcome, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.outcome, p.err
}

// vet passes on the answer to req, a request the probe's transport sent,
// unless req is a server/discover whose answer is not probeModern.
func (p *discoverProbe) vet(req mcptransport.JSONRPCRequest, resp *mcptransport.JSONRPCResponse, err error) (*mcptransport.JSONRPCResponse, error) {
	if req.Method != string(mcp.MethodServerDiscover) {
		return resp, err
	}
	switch {
	case err != nil:
		p.set(probeNoAnswer, err)
		return nil, err
	case resp == nil:
		err = fmt.Errorf("%s: no answer", req.Method)
		p.set(probeNoAnswer, err)
		return nil, err
	case resp.Error != nil:
		// mcp-go asks again at the version a -32022 names, if it is
		// 2026-07-28 or later; that answer is vetted in turn.
		p.set(probeOlder, nil)
		return resp, nil
	}
	var d struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	_ = json.Unmarshal(resp.Result, &d) // no list is not a modern one
	if !modernOnly(d.SupportedVersions) {
		p.set(probeOlder, nil)
		return nil, fmt.Errorf("%w: server/discover names %q", errNotModern, d.SupportedVersions)
	}
	p.set(probeModern, nil)
	return resp, nil
}

// refusal is the error of the initialize a probe over HTTP refuses to send:
// errNotModern, or, when server/discover was refused for want of a
// sign-in, that.
func (p *discoverProbe) refusal() error {
	_, err := p.result()
	switch {
	case err == nil:
		return errNotModern
	case errors.Is(err, mcpauth.ErrSignInRequired):
		return err
	default:
		return fmt.Errorf("%w (server/discover: %w)", errNotModern, err)
	}
}

// modernOnly reports whether supported, a server's supportedVersions, names
// a version from 2026-07-28 on that the gateway speaks and no older one.
func modernOnly(supported []string) bool {
	modern := slices.ContainsFunc(supported, func(v string) bool { return mcp.IsModernProtocol(v) && mcp.IsValidProtocolVersion(v) })
	older := slices.ContainsFunc(supported, func(v string) bool { return !mcp.IsModernProtocol(v) && mcp.IsValidProtocolVersion(v) })
	return modern && !older
}

// streamable is mcp-go's Streamable HTTP transport with what the gateway
// needs of it fixed:
//   - On a 2026-07-28 connection a 404 is the server's answer to a method
//     it does not have (-32601): there is no session to lose. mcp-go
//     reports every 404 as ErrSessionTerminated (streamable_http.go:882),
//     which would retire a working session; here it is a method-not-found
//     error, an answer of the server (IsServerAnswer).
//   - With probe set, server/discover is vetted, and the initialize mcp-go
//     then falls back to is refused (errNotModern): the gateway opens the
//     2025-11-25 session itself, with the GET stream.
type streamable struct {
	*mcptransport.StreamableHTTP
	probe   *discoverProbe // nil when not probing
	hist    *history       // where its requests are kept
	sess    *Session       // the session it carries
	version atomic.Value   // string: the version mcp-go set for the connection
}

// SetProtocolVersion records the version mcp-go negotiated and passes it on.
func (t *streamable) SetProtocolVersion(version string) {
	t.version.Store(version)
	t.StreamableHTTP.SetProtocolVersion(version)
}

func (t *streamable) modern() bool { return mcp.IsModernProtocol(t.current()) }

// current is the version mcp-go set for the connection; "" before.
func (t *streamable) current() string {
	v, _ := t.version.Load().(string)
	return v
}

// refusesItsOwn reports whether resp is an unsupported-version error
// (-32022) that names version, the one the request was sent at, among the
// supported ones.
func refusesItsOwn(resp *mcptransport.JSONRPCResponse, err error, version string) bool {
	if err != nil || resp == nil || resp.Error == nil || resp.Error.Code != mcp.UNSUPPORTED_PROTOCOL_VERSION || version == "" {
		return false
	}
	raw, err := json.Marshal(resp.Error.Data)
	if err != nil {
		return false
	}
	var d struct {
		Supported []string `json:"supported"`
	}
	return json.Unmarshal(raw, &d) == nil && slices.Contains(d.Supported, version)
}

// SendRequest sends req, with the answers fixed as the type says, and
// keeps it in the history.
func (t *streamable) SendRequest(ctx context.Context, req mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
	return t.hist.send(ctx, req, t.send)
}

// SetRequestHandler keeps the server's requests in the history too.
func (t *streamable) SetRequestHandler(handler mcptransport.RequestHandler) {
	t.StreamableHTTP.SetRequestHandler(t.hist.serve(t.sess, handler))
}

func (t *streamable) send(ctx context.Context, req mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
	if t.probe != nil && req.Method == string(mcp.MethodInitialize) {
		return nil, t.probe.refusal()
	}
	resp, err := t.StreamableHTTP.SendRequest(ctx, req)
	if t.probe != nil && req.Method == string(mcp.MethodServerDiscover) && refusesItsOwn(resp, err, t.current()) {
		// A server that refuses the very version it names as supported
		// (one whose version check ran before it was ready, a replica
		// behind a balancer that is not) is asked once more at that
		// version; mcp-go retries only at another one.
		resp, err = t.StreamableHTTP.SendRequest(ctx, req)
	}
	if errors.Is(err, mcptransport.ErrSessionTerminated) && t.modern() {
		resp, err = &mcptransport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: req.ID,
			Error: &mcp.JSONRPCErrorDetails{Code: mcp.METHOD_NOT_FOUND, Message: req.Method + ": not found (HTTP 404)"}}, nil
	}
	if t.probe != nil {
		return t.probe.vet(req, resp, err)
	}
	return resp, err
}

// stdioProbe is the stdio transport with its requests kept in the
// history and, when probing, server/discover vetted; the initialize mcp-go
// falls back to goes to the same child.
type stdioProbe struct {
	*stdiorpc.Transport
	probe *discoverProbe // nil when not probing
	hist  *history
	sess  *Session // the session it carries
}

// SetRequestHandler keeps the server's requests in the history too.
func (t stdioProbe) SetRequestHandler(handler mcptransport.RequestHandler) {
	t.Transport.SetRequestHandler(t.hist.serve(t.sess, handler))
}

// SendRequest sends req, vetting the answer to server/discover.
func (t stdioProbe) SendRequest(ctx context.Context, req mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
	return t.hist.send(ctx, req, func(ctx context.Context, req mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
		resp, err := t.Transport.SendRequest(ctx, req)
		if t.probe == nil {
			return resp, err
		}
		return t.probe.vet(req, resp, err)
	})
}
