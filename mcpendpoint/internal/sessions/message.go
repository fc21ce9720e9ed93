package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrUnknownSession is matched by the error of a request naming a session
// id the endpoint does not know, or one another user opened: the client
// gets 404 and must initialize again.
var ErrUnknownSession = errors.New("unknown MCP session")

// Relay carries a message to every other replica of the service; see
// mcpendpoint's Endpoint.Receive. Publish must not block; delivery may be
// lost.
type Relay interface {
	Publish(msg []byte) error
}

// Replicas keeps a liveness lease for each replica of the service, where
// all of them read it: a replica renews its own while it runs, and one
// whose lease expired, or that has none, is gone. It is the evidence a
// replica needs before it tells a client that another replica, which runs
// the client's call, is gone: a replica that is only slow to answer
// through the Relay keeps its lease. Its methods are safe for concurrent
// use.
type Replicas interface {
	// RenewReplica keeps the lease of replica tag live for ttl from now.
	RenewReplica(ctx context.Context, tag string, ttl time.Duration) error
	// LiveReplicas returns the tags of the replicas whose lease is live.
	LiveReplicas(ctx context.Context) ([]string, error)
	// DropReplica ends the lease of replica tag, which stops.
	DropReplica(ctx context.Context, tag string) error
}

// MaxRelayMessage is the largest Relay message the endpoint sends: what
// store.Bus carries.
const MaxRelayMessage = 4 << 20

// ErrRelayTooLarge is the error of publishing a message over
// MaxRelayMessage.
var ErrRelayTooLarge = fmt.Errorf("relay message over the limit of %d bytes", MaxRelayMessage)

// Kinds of the messages of the session machinery between the replicas, in
// the order of mcpendpoint's doc.go table, which says who sends each and
// who acts on it.
const (
	// Sessions on /mcp (shared.go, answers.go).
	relayEnded       = "mcp_session_ended"
	relayAnswer      = "mcp_client_answer"
	relayUpdated     = "mcp_resource_updated"
	relayUnsubscribe = "mcp_resource_unsubscribe"
	// Sampling on another replica's GET stream (samplerelay.go).
	relaySample      = "mcp_sample"
	relaySampleTaken = "mcp_sample_taken"
	relaySampled     = "mcp_sampled"
	// Call streams resumed on another replica (resumerelay.go).
	relayResume = "mcp_stream_resume"
	relayEvents = "mcp_stream_events"
	relayLeft   = "mcp_stream_left"
	relayAbsent = "mcp_stream_absent"
	// Sessions of the legacy SSE transport (sserelay.go).
	relaySSEMessage = "mcp_sse_message"
)

// receivers take the messages of each kind, on the Relay's goroutine:
// none blocks on I/O.
var receivers = map[string]func(*Hub, *Message){
	relayEnded:       (*Hub).receiveEnded,
	relayAnswer:      (*Hub).receiveAnswer,
	relayUpdated:     (*Hub).receiveUpdated,
	relayUnsubscribe: (*Hub).receiveUnsubscribe,
	relaySample:      (*Hub).receiveSample,
	relaySampleTaken: (*Hub).receiveSampleTaken,
	relaySampled:     (*Hub).receiveSampled,
	relayResume:      (*Hub).receiveResume,
	relayEvents:      (*Hub).receiveEvents,
	relayLeft:        (*Hub).receiveLeft,
	relayAbsent:      (*Hub).receiveAbsent,
	relaySSEMessage:  (*Hub).receiveSSEMessage,
}

// Message is a message of one replica to the others through the Relay, a
// JSON object: Kind says what it is, and so which of the other fields it
// sets (the others are left out). It names a session by the SHA-256 of
// its id (idHash), never by the id. The endpoint's own messages carry
// these fields and more.
type Message struct {
	Kind string `json:"kind"`
	// Session is the idHash of the session the message is about.
	Session string `json:"session,omitempty"`
	// Body is a client's message (relayAnswer, relaySSEMessage), or a
	// sampling request or its result (relaySample, relaySampled).
	Body json.RawMessage `json:"body,omitempty"`
	// URI is the resource (relayUpdated, relayUnsubscribe).
	URI string `json:"uri,omitempty"`
	// Base is the base URL (scheme://host) of the request that posted a
	// client's message (relaySSEMessage).
	Base string `json:"base,omitempty"`

	// Reply names the asking replica's wait (relaySample,
	// relaySampleTaken, relaySampled, and the endpoint's own).
	Reply string `json:"reply,omitempty"`
	// Deadline is when the asking replica stops waiting (relaySample).
	Deadline time.Time `json:"deadline,omitzero"`
	// Error says why there is no result (relaySampled, and the
	// endpoint's own).
	Error string `json:"error,omitempty"`

	// Stream is a call stream, and Reader the asking replica's reader of
	// it, its mirror (relayResume, relayEvents, relayLeft, relayAbsent).
	Stream string `json:"stream,omitempty"`
	Reader string `json:"reader,omitempty"`
	// After is the last event the client has (relayResume).
	After int `json:"after,omitempty"`
	// Events are the stream's events from the holder (relayEvents).
	Events []relayedEvent `json:"events,omitempty"`
	// Gone says the holder stopped forwarding: another connection took
	// the stream, or it is forgotten (relayEvents).
	Gone bool `json:"gone,omitempty"`
	// Replica is the tag of a replica that does not hold the stream
	// (relayAbsent).
	Replica string `json:"replica,omitempty"`
}

// relayedEvent is an event of a call stream in a relayEvents message.
type relayedEvent struct {
	Seq   int             `json:"seq"`
	Data  json.RawMessage `json:"data"`
	Final bool            `json:"final,omitempty"`
}

// Receive hands m, a message another replica sent, to the receiver of its
// kind, which acts on it when it is for this replica; a message of
// another kind is ignored. It does not block on I/O.
func (h *Hub) Receive(m *Message) {
	if receive := receivers[m.Kind]; receive != nil {
		receive(h, m)
	}
}

// publish sends m to the other replicas (Config.Publish).
func (h *Hub) publish(m Message) error { return h.Publish(m) }
