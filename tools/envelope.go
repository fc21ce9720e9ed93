package tools

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"slices"
)

// Envelope is one event as it goes over the wire (SSE data line, WebSocket
// message) and into a conversation's saved event log: DESIGN.md, "HTTP API".
type Envelope struct {
	Type           EventType       `json:"type"`
	ID             string          `json:"id"`
	UserID         string          `json:"user_id"`
	ConversationID string          `json:"conversation_id"`
	QueryID        string          `json:"query_id"`
	Payload        json.RawMessage `json:"payload"`
}

// idPrefix gives each event type the prefix of its envelope id, as Elysia's
// frontend expects ("sta-…", "res-…").
var idPrefix = map[EventType]string{
	EventStatus:           "sta",
	EventText:             "tex",
	EventResult:           "res",
	EventSelfHealingError: "err",
	EventTreeUpdate:       "tre",
	EventWarning:          "war",
	EventTitle:            "tit",
	EventError:            "err",
	EventCompleted:        "com",
	EventElicitation:      "eli",
}

// NewEnvelope wraps ev for the given user, conversation and query, with a
// fresh random id. A nil payload becomes {}.
func NewEnvelope(ev Event, userID, conversationID, queryID string) (Envelope, error) {
	payload := []byte("{}")
	switch p := ev.Payload.(type) {
	case nil:
	case ResultPayload:
		b, err := p.appendJSON(make([]byte, 0, len(p.entry)+32))
		if err != nil {
			return Envelope{}, err
		}
		payload = b
	default:
		b, err := Marshal(p)
		if err != nil {
			return Envelope{}, err
		}
		payload = b
	}
	prefix := idPrefix[ev.Type]
	if prefix == "" {
		prefix = "evt"
	}
	return Envelope{
		Type:           ev.Type,
		ID:             prefix + "-" + NewID(),
		UserID:         userID,
		ConversationID: conversationID,
		QueryID:        queryID,
		Payload:        payload,
	}, nil
}

// NewID returns 16 random hex characters, for query and event ids.
func NewID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// AppendEnvelope appends env's JSON to dst as Marshal writes it, but with
// env.Payload copied in as it is instead of validated and compacted again:
// the payload must be compact JSON, as NewEnvelope makes it. For a large
// result that second pass over the payload was most of the envelope's cost.
// An empty payload is written as null. The members are written one by one
// (every event is written twice, streamed and saved: encoding/json's
// reflection was 2 % of the service's CPU). The error is always nil.
func AppendEnvelope(dst []byte, env Envelope) ([]byte, error) {
	payload := []byte(env.Payload)
	if len(payload) == 0 {
		payload = []byte("null")
	}
	dst = slices.Grow(dst, len(`{"type":,"id":,"user_id":,"conversation_id":,"query_id":,"payload":}`)+
		len(env.Type)+len(env.ID)+len(env.UserID)+len(env.ConversationID)+len(env.QueryID)+10+len(payload))
	dst = append(dst, `{"type":`...)
	dst = AppendJSONString(dst, string(env.Type), false)
	dst = append(dst, `,"id":`...)
	dst = AppendJSONString(dst, env.ID, false)
	dst = append(dst, `,"user_id":`...)
	dst = AppendJSONString(dst, env.UserID, false)
	dst = append(dst, `,"conversation_id":`...)
	dst = AppendJSONString(dst, env.ConversationID, false)
	dst = append(dst, `,"query_id":`...)
	dst = AppendJSONString(dst, env.QueryID, false)
	dst = append(dst, `,"payload":`...)
	return append(append(dst, payload...), '}'), nil
}
