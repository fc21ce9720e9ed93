package stream

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/web"
)

// DefaultMaxQueriesPerSocket is how many queries may run at once on one
// WebSocket when Options.MaxQueriesPerSocket is zero.
const DefaultMaxQueriesPerSocket = 4

// Runner runs users' queries through the decision loop. Safe for concurrent
// use by any number of requests. cmd satisfies it with tree.Manager.Query
// and the configured model.
type Runner interface {
	// RunQuery runs one query of a conversation and returns when the run has
	// ended. It calls emit with each event's envelope, in order, and emit
	// may be called from any goroutine, though not concurrently; emit does not
	// block for long and drops envelopes once ctx is done. ctx ends when the
	// client goes away, and the run must then stop promptly.
	//
	// When another query of the conversation is running and does not end
	// in time, RunQuery returns an error matching tree.ErrBusy, preferably
	// before emitting anything. An error returned after envelopes were
	// emitted is sent to the client as an error event, unless the run
	// already emitted one.
	RunQuery(ctx context.Context, userID, conversationID, queryID, query string, emit func(tools.Envelope)) error
}

// Options configures the Streams. Runner is required.
type Options struct {
	// Runner runs the queries.
	Runner Runner
	// Changes tells the event streams (GET /events/...) about changes made
	// outside the server's requests (an mcp.json reload, a gateway's
	// state). Nil means the streams see only the changes made through the
	// server's own routes.
	Changes Changes
	// MaxQueriesPerSocket limits the queries running at once on one
	// WebSocket, so that one client cannot start runs without bound. A
	// query over the limit gets an error event saying so, and the socket
	// and its other queries go on; a query stops counting once it has sent
	// completed (or its final error). Zero or less means
	// DefaultMaxQueriesPerSocket (4).
	MaxQueriesPerSocket int
	// Relay carries stops, answers to servers' questions and the event
	// streams' news between the replicas of the service, so that any
	// replica takes any request; the caller passes each message the
	// Relay delivers to Streams.Receive. Nil means one replica: a stop or
	// an answer for work this server does not hold is 404 at once.
	Relay Relay
	// RelayWait bounds a request's wait for the other replicas' reply
	// through the Relay (a stop or an answer for work this server does not
	// hold, which is 404 when no replica holds it). Zero means
	// DefaultRelayWait (1 s).
	RelayWait time.Duration
}

// Streams serves the query and event streams of one web.Server: pass
// Routes in web.Options.Routes, and Receive the Relay's messages. Safe for
// concurrent use; it starts no goroutines of its own beyond those of the
// streams it serves, which end with their requests.
type Streams struct {
	// runner is Options.Runner, telling the hub when each run ends.
	runner Runner
	// changes, relay and relayWait are Options.Changes, Options.Relay and
	// Options.RelayWait, defaulted.
	changes   Changes
	relay     Relay
	relayWait time.Duration
	// maxSocketQueries is Options.MaxQueriesPerSocket, defaulted.
	maxSocketQueries int
	// k, logger, heartbeat and writeTimeout come from the Server, in
	// Routes, which web.New calls before the Server serves anything.
	k            *web.Kit
	logger       *slog.Logger
	heartbeat    time.Duration
	writeTimeout time.Duration
	// running holds the cancel funcs of the queries in flight (stop).
	running runningQueries
	// hub tells the event streams what changed.
	hub *liveHub
	// waiters holds the requests waiting for the other replicas' replies.
	waiters relayWaiters
}

// New returns the Streams for opts. It panics without a Runner, which is
// a programming error. It does no I/O.
func New(opts Options) *Streams {
	if opts.Runner == nil {
		panic("stream.New: nil Options.Runner")
	}
	if opts.MaxQueriesPerSocket <= 0 {
		opts.MaxQueriesPerSocket = DefaultMaxQueriesPerSocket
	}
	if opts.RelayWait <= 0 {
		opts.RelayWait = DefaultRelayWait
	}
	s := &Streams{changes: opts.Changes, relay: opts.Relay, relayWait: opts.RelayWait,
		maxSocketQueries: opts.MaxQueriesPerSocket, hub: newLiveHub(), logger: slog.New(slog.DiscardHandler)}
	if s.relay != nil {
		s.hub.relay = s.relayLiveChange
	}
	s.runner = liveRunner{Runner: opts.Runner, hub: s.hub}
	return s
}

// Routes registers the streams' routes on a web.Server: pass it in
// web.Options.Routes, once. The event streams watch every change made
// through the Server's routes (web.Kit.Watch).
func (s *Streams) Routes(k *web.Kit) {
	s.k, s.logger, s.heartbeat, s.writeTimeout = k, k.Logger(), k.Heartbeat(), k.WriteTimeout()
	k.Watch(func(ch web.Change) {
		t := allTopics
		if ch.ServersOnly {
			t = topicServers
		}
		s.hub.publish(ch.User, t)
	})
	k.Handle(http.MethodPost, "/query/:user_id/:conversation_id", k.RequireUser, s.querySSE)
	k.Handle(http.MethodPost, "/query/:user_id/:conversation_id/stop", k.RequireUser, s.stopQuery)
	k.Handle(http.MethodPost, "/elicitations/:elicitation_id", k.RequireKey, s.answerElicitation)
	// Each WebSocket message is checked against the key's user.
	k.Handle(http.MethodGet, "/ws/query", k.RequireKey, s.queryWS)
	k.Handle(http.MethodGet, "/events/:user_id", k.RequireUser, s.liveEvents)
	k.Handle(http.MethodGet, "/events/:user_id/:conversation_id", k.RequireUser, s.liveEvents)
}

// object is a response body with its keys in order; field is one of its
// members.
type (
	object = tools.Object
	field  = tools.Member
)

// kv is one member of a response body.
func kv(key string, value any) field { return field{Key: key, Value: value} }

// nonNil returns s, or an empty slice for nil, so that JSON shows [].
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// sizeText writes a size limit for people: "1 MiB" for the default,
// bytes otherwise.
func sizeText(limit int64) string {
	if limit == web.DefaultMaxBodyBytes {
		return "1 MiB"
	}
	return fmt.Sprintf("%d bytes", limit)
}
