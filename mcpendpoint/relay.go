package mcpendpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Relay carries a message to every other replica of the service; see
// Endpoint.Receive. Publish must not block; delivery may be lost.
type Relay interface {
	Publish(msg []byte) error
}

// Kinds of the messages the replicas send each other through the Relay,
// in the order of doc.go's table, which says who sends each and who acts
// on it.
const (
	// Sessions of 2025-11-25 (or older) on /mcp (shared.go, answers.go).
	relayEnded       = "mcp_session_ended"
	relayAnswer      = "mcp_client_answer"
	relayUpdated     = "mcp_resource_updated"
	relayUnsubscribe = "mcp_resource_unsubscribe"
	// Sampling on another replica's GET stream (samplerelay.go).
	relaySample  = "mcp_sample"
	relaySampled = "mcp_sampled"
	// Call streams resumed on another replica (resumerelay.go).
	relayResume = "mcp_stream_resume"
	relayEvents = "mcp_stream_events"
	relayLeft   = "mcp_stream_left"
	relayAbsent = "mcp_stream_absent"
	// Sessions of the legacy SSE transport (sserelay.go).
	relaySSEMessage = "mcp_sse_message"
	// A 2026-07-28 retry of a call another replica holds, and its
	// outcomes (heldrelay.go).
	relayInputRetry = "mcp_input_retry"
)

// receivers take the messages of each kind, on the Relay's goroutine:
// none blocks on I/O.
var receivers = map[string]func(*Endpoint, *envelope){
	relayEnded:       (*Endpoint).receiveEnded,
	relayAnswer:      (*Endpoint).receiveAnswer,
	relayUpdated:     (*Endpoint).receiveUpdated,
	relayUnsubscribe: (*Endpoint).receiveUnsubscribe,
	relaySample:      (*Endpoint).receiveSample,
	relaySampled:     (*Endpoint).receiveSampled,
	relayResume:      (*Endpoint).receiveResume,
	relayEvents:      (*Endpoint).receiveEvents,
	relayLeft:        (*Endpoint).receiveLeft,
	relayAbsent:      (*Endpoint).receiveAbsent,
	relaySSEMessage:  (*Endpoint).receiveSSEMessage,
	relayInputRetry:  (*Endpoint).receiveInputRetry,
}

// maxRelayMessage is the largest Relay message the endpoint sends: what
// store.Bus carries.
const maxRelayMessage = 4 << 20

// errRelayTooLarge is publish's error for a message over maxRelayMessage.
var errRelayTooLarge = fmt.Errorf("relay message over the limit of %d bytes", maxRelayMessage)

// envelope is a message of one replica to the others through the Relay,
// a JSON object: Kind says what it is, and so which of the other fields
// it sets (the others are left out). It names a session by the SHA-256 of
// its id (idHash), never by the id.
type envelope struct {
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

	// Reply names the asking replica's wait (relaySample, relaySampled,
	// relayInputRetry).
	Reply string `json:"reply,omitempty"`
	// Deadline is when the asking replica stops waiting (relaySample).
	Deadline time.Time `json:"deadline,omitzero"`
	// Error says why there is no result (relaySampled, relayInputRetry).
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

	// A relayInputRetry is a retry (Holder, State and Responses set; the
	// state names its user by hash) or an outcome (Outcome set: Waiting,
	// Result, Task or Error).
	//
	// Holder is the tag of the replica the retry is for.
	Holder    string          `json:"holder,omitempty"`
	State     string          `json:"state,omitempty"`
	Responses json.RawMessage `json:"responses,omitempty"`
	// Tasks is the retry's task policy, when the call may become a task:
	// the holder waits for it as awaitTask does.
	Tasks   *relayTasks `json:"tasks,omitempty"`
	Outcome bool        `json:"outcome,omitempty"`
	// Waiting says the holder has the call, which has no event yet.
	Waiting bool            `json:"waiting,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	// Task is the task envelope of a call the holder made a task.
	Task json.RawMessage `json:"task,omitempty"`
}

// relayedEvent is an event of a call stream in a relayEvents message.
type relayedEvent struct {
	Seq   int             `json:"seq"`
	Data  json.RawMessage `json:"data"`
	Final bool            `json:"final,omitempty"`
}

// relayTasks is a relayed retry's taskPolicy.
type relayTasks struct {
	Support  string `json:"support"`
	Declared bool   `json:"declared"`
}

// publish sends m to the other replicas through the Relay; a message over
// maxRelayMessage is errRelayTooLarge.
func (e *Endpoint) publish(m envelope) error {
	msg, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if len(msg) > maxRelayMessage {
		return errRelayTooLarge
	}
	return e.opts.Relay.Publish(msg)
}

// Receive takes a message another replica sent through the Relay and
// hands it to the receiver of its kind, which acts on it when it is for
// this replica (doc.go's table says which replica is). Messages of other
// kinds are ignored (a newer replica's, during a rolling upgrade, or not
// the endpoint's), and so is nil (messages were lost: a session ended
// meanwhile ends here when its next use is recorded). It does not block
// on I/O.
func (e *Endpoint) Receive(msg []byte) {
	if !bytes.Contains(msg, []byte(`"mcp_`)) {
		return // the cheap test: the other replicas' other messages
	}
	var m envelope
	if json.Unmarshal(msg, &m) != nil {
		return
	}
	if receive := receivers[m.Kind]; receive != nil {
		receive(e, &m)
	}
}
