package mcpendpoint

import (
	"bytes"
	"encoding/json"

	"github.com/elysia-go/elysia/mcpendpoint/internal/sessions"
)

// Relay carries a message to every other replica of the service; see
// Endpoint.Receive. Publish must not block; delivery may be lost.
type Relay = sessions.Relay

// relayInputRetry is the kind of the one message of 2026-07-28 between the
// replicas: a retry of a call another replica holds, and its outcomes
// (heldrelay.go). The other kinds, in doc.go's table, are the 2025-11-25
// session machinery's (internal/sessions).
const relayInputRetry = "mcp_input_retry"

// maxRelayMessage is the largest Relay message the endpoint sends: what
// store.Bus carries.
const maxRelayMessage = sessions.MaxRelayMessage

// errRelayTooLarge is publish's error for a message over maxRelayMessage.
var errRelayTooLarge = sessions.ErrRelayTooLarge

// envelope is a message of one replica to the others through the Relay,
// a JSON object: Kind says what it is, and so which of the other fields
// it sets (the others are left out). The session machinery's messages
// are a sessions.Message; a relayInputRetry is one too (Kind, Reply and
// Error), with fields of its own.
type envelope struct {
	sessions.Message

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

// relayTasks is a relayed retry's taskPolicy.
type relayTasks struct {
	Support  string `json:"support"`
	Declared bool   `json:"declared"`
}

// publishSession sends m, a message of the session machinery, to the
// other replicas (sessions.Config.Publish).
func (e *Endpoint) publishSession(m sessions.Message) error {
	return e.publish(envelope{Message: m})
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
	if m.Kind == relayInputRetry {
		e.receiveInputRetry(&m)
		return
	}
	e.hub.Receive(&m.Message)
}
