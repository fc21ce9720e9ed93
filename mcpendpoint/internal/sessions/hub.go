package sessions

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpendpoint/internal/callstream"
	"github.com/elysia-go/elysia/mcpendpoint/internal/drain"
	"github.com/elysia-go/elysia/mcpendpoint/internal/jsonrpc"
	"github.com/elysia-go/elysia/mcpendpoint/internal/samplerelay"
	"github.com/elysia-go/elysia/mcpendpoint/internal/sessionbook"
	"github.com/elysia-go/elysia/mcpendpoint/internal/streamrelay"
)

// Versions are the protocol versions served with sessions: 2025-11-25 and
// the older ones negotiated down.
var Versions = []string{
	mcp.ProtocolVersion20251125, mcp.ProtocolVersion20250618, mcp.ProtocolVersion20250326, mcp.ProtocolVersion20241105,
}

// Config is what a Hub is given by its endpoint.
type Config struct {
	// Logger receives the warnings.
	Logger *slog.Logger
	// Book is the endpoint's book of the sessions here.
	Book *sessionbook.Book
	// Drain is the endpoint's part in a shutdown.
	Drain *drain.State
	// Sessions, Relay and Replicas are the endpoint's Options of those
	// names: nil shares nothing with the other replicas.
	Sessions SessionStore
	Relay    Relay
	Replicas Replicas
	// SessionIdleTTL, ListTimeout and ResumeWait are the endpoint's
	// Options of those names.
	SessionIdleTTL time.Duration
	ListTimeout    time.Duration
	ResumeWait     time.Duration
	// Tag names this replica in the ids of its requests to clients
	// (requestids.go) and in the replicas' messages.
	Tag string
	// RelayWait bounds the wait for the replica holding a call stream to
	// answer a resume: past it the client gets 404 or 503
	// (resumerelay.go).
	RelayWait time.Duration
	// StoreWait bounds the SessionStore work of one request.
	StoreWait time.Duration
	// Publish sends a message to the other replicas through the Relay;
	// its error matches ErrRelayTooLarge for one over MaxRelayMessage.
	Publish func(Message) error
	// StreamPoll is how long a call stream's own connection is held
	// before the client is left to resume it (Expose.StreamPoll).
	StreamPoll func() time.Duration
	// SubscribeUpstream subscribes user to uri at the server that lists
	// it, calling updated for each of its updates, and returns the func
	// that ends the subscription.
	SubscribeUpstream func(ctx context.Context, user, uri string, updated func()) (stop func(context.Context) error, err error)
	// Go runs f on a goroutine the endpoint's Close waits for, and
	// reports false, running nothing, once it is closing.
	Go func(f func()) bool
	// WithBase returns ctx carrying base, the base URL (scheme://host) of
	// the request that posted a client's message; Base reads it.
	WithBase func(ctx context.Context, base string) context.Context
	Base     func(ctx context.Context) string
}

// Hub is the 2025-11-25 session machinery of one endpoint. Create it with
// New, register its hooks with AddHooks, and give it mcp-go's servers
// with Attach before it serves. It is safe for concurrent use.
type Hub struct {
	Config
	srv  *mcpserver.MCPServer
	http *mcpserver.StreamableHTTPServer
	sse  *mcpserver.SSEServer

	samples *samplerelay.State
	streams callstream.Registry
	relayed streamrelay.Table
	// subs are the sessions' resource subscriptions (subscribe.go).
	subs subscriptions

	// mu guards inflight, the cancel funcs of the work running (calls,
	// GET streams), by MCP session id, so that ending a session cancels
	// it upstream.
	mu       sync.Mutex
	inflight map[string]map[*context.CancelFunc]struct{}
}

// New returns the Hub of c.
func New(c Config) *Hub {
	h := &Hub{Config: c, samples: samplerelay.New()}
	h.streams.ResumeWait = c.ResumeWait
	h.streams.Logger = c.Logger
	return h
}

// AddHooks registers on hooks what the Hub must hear of mcp-go's server:
// the sessions that end and, with a SessionStore, the sessions
// initialized here and the log levels their clients set, and the sessions
// open here for sampling.
func (h *Hub) AddHooks(hooks *mcpserver.Hooks) {
	hooks.AddOnUnregisterSession(h.sessionEnded)
	if h.Sessions == nil {
		return
	}
	hooks.AddAfterInitialize(h.recordSession)
	hooks.AddAfterSetLevel(h.recordLevel)
	hooks.AddOnRegisterSession(h.samples.Registered)
	hooks.AddOnUnregisterSession(h.samples.Unregistered)
}

// Attach gives the Hub the endpoint's mcp-go server and its Streamable
// HTTP and SSE transports.
func (h *Hub) Attach(srv *mcpserver.MCPServer, http *mcpserver.StreamableHTTPServer, sse *mcpserver.SSEServer) {
	h.srv, h.http, h.sse = srv, http, sse
}

// Streams is the registry of the call streams held here.
func (h *Hub) Streams() *callstream.Registry { return &h.streams }

// EndMirrors ends the streams of calls that other replicas run, read
// here: their clients resume them elsewhere (a shutdown's Drain).
func (h *Hub) EndMirrors() { h.relayed.EndMirrors() }

// StopStreams stops forwarding streams held here to other replicas, and
// closes the call streams.
func (h *Hub) StopStreams() {
	h.relayed.StopForwards()
	h.streams.Close()
}

// Close ends the relayed sampling requests put to clients here.
func (h *Hub) Close() { h.samples.Close() }

// Request is one HTTP request of the endpoint as its router read it: a
// POST's body is read once and decoded once, and every handler takes it
// from here; R.Body reads it again for mcp-go.
type Request struct {
	R    *http.Request
	User string
	// SID is the Mcp-Session-Id header: a 2025-11-25 (or older) session's.
	SID string
	// Body is a POST's body; Msg is it decoded, nil when it is not one
	// JSON-RPC message (a batch, not JSON: mcp-go answers it).
	Body []byte
	Msg  *jsonrpc.Message
}

// Post reports whether q is a POST of one JSON-RPC message whose method is
// one of methods.
func (q *Request) Post(methods ...string) bool {
	if q.R.Method != http.MethodPost || q.Msg == nil {
		return false
	}
	for _, m := range methods {
		if q.Msg.Method == m {
			return true
		}
	}
	return false
}

// sessionID returns the MCP session id of a call mcp-go serves, from its
// ctx, or "" outside one.
func sessionID(ctx context.Context) string {
	if s := mcpserver.ClientSessionFromContext(ctx); s != nil {
		return s.SessionID()
	}
	return ""
}

// Log keys of the Hub's log lines.
const (
	logKeyUser   = "user"
	logKeyErr    = "err"
	logKeyStatus = "status"
)
