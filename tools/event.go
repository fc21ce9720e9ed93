package tools

// EventType names the kind of an event as it appears in the wire envelope's
// "type" field (DESIGN.md, HTTP API).
type EventType string

// Event types. Tools emit status, text, warning and self_healing_error events;
// the tree emits result (after tagging objects with _REF_ID), tree_update,
// title, error and completed.
const (
	EventStatus           EventType = "status"
	EventText             EventType = "text"
	EventResult           EventType = "result"
	EventSelfHealingError EventType = "self_healing_error"
	EventTreeUpdate       EventType = "tree_update"
	EventWarning          EventType = "warning"
	EventTitle            EventType = "title"
	EventError            EventType = "error"
	EventCompleted        EventType = "completed"
)

// Event is one message of a query's stream. Payload is marshalled as the
// envelope's "payload" field; it is one of the payload types below or a
// map[string]any.
type Event struct {
	Type    EventType
	Payload any
}

// StatusPayload is the payload of status and warning events.
type StatusPayload struct {
	Text string `json:"text"`
}

// TextPayload is the payload of a text event: Elysia's "response" shape.
type TextPayload struct {
	Type     string           `json:"type"` // "response"
	Metadata map[string]any   `json:"metadata"`
	Objects  []map[string]any `json:"objects"` // [{"text": "..."}]
}

// ResultPayload is the payload of a result event, in a shape Elysia's
// frontend renders ("table", "document", "text", "image", ...).
type ResultPayload struct {
	Type     string           `json:"type"`
	Objects  []map[string]any `json:"objects"`
	Metadata map[string]any   `json:"metadata"`

	// entry is the JSON of the environment entry holding Objects and
	// Metadata (see EnvEntry.ResultPayload), which the envelope reuses.
	entry []byte
}

// appendJSON appends p's JSON, as Marshal writes it, to dst, splicing in
// the entry's JSON when p has it.
func (p ResultPayload) appendJSON(dst []byte) ([]byte, error) {
	if p.entry == nil {
		return appendMarshal(dst, p)
	}
	dst = append(dst, `{"type":`...)
	dst, err := appendMarshal(dst, p.Type)
	if err != nil {
		return nil, err
	}
	dst = append(dst, ',')
	return append(dst, p.entry[1:]...), nil // the entry's members follow "type"
}

// SelfHealingErrorPayload is the payload of a self_healing_error event.
type SelfHealingErrorPayload struct {
	Feedback     string `json:"feedback"`
	ErrorMessage string `json:"error_message"`
}

// TreeUpdatePayload is the payload of a tree_update event.
type TreeUpdatePayload struct {
	Node      string `json:"node"`
	TreeIndex int    `json:"tree_index"`
	Decision  string `json:"decision"`
	Reasoning string `json:"reasoning"`
	Reset     bool   `json:"reset"`
}

// NewText returns a text event carrying a response.
func NewText(text string) Event {
	return Event{Type: EventText, Payload: TextPayload{
		Type:     "response",
		Metadata: map[string]any{},
		Objects:  []map[string]any{{"text": text}},
	}}
}

// NewStatus returns a status event.
func NewStatus(text string) Event {
	return Event{Type: EventStatus, Payload: StatusPayload{Text: text}}
}

// NewWarning returns a warning event.
func NewWarning(text string) Event {
	return Event{Type: EventWarning, Payload: StatusPayload{Text: text}}
}
