package tools

import "context"

// EventElicitation asks the user of a run for input on behalf of an MCP
// server (its payload is an ElicitationPayload); the answer comes back
// through the Asker that emitted it.
const EventElicitation EventType = "elicitation"

// ProgressPayload is the payload of a status event that reports a tool's
// progress (MCP notifications/progress). Progress only grows; Total is nil
// when the server does not know it.
type ProgressPayload struct {
	Text string `json:"text"`
	// CallID tells apart the calls of a query: every progress of one call
	// carries the same id.
	CallID   string   `json:"call_id"`
	Server   string   `json:"server"`
	Tool     string   `json:"tool"`
	Progress float64  `json:"progress"`
	Total    *float64 `json:"total"`
	Message  string   `json:"message"`
}

// ElicitationPayload is the payload of an elicitation event: what a server
// asks the user (DESIGN.md, "Server-initiated messages").
type ElicitationPayload struct {
	ElicitationID string `json:"elicitation_id"`
	Server        string `json:"server"`
	Tool          string `json:"tool"`
	// Mode is "form" (answer RequestedSchema) or "url" (open URL, then say
	// done by accepting).
	Mode    string `json:"mode"`
	Message string `json:"message"`
	// RequestedSchema is the form's JSON schema with its defaults filled
	// in; nil in url mode.
	RequestedSchema map[string]any `json:"requested_schema"`
	// FieldOrder names RequestedSchema's properties in the server's order
	// (a JSON object's order is lost in a map), when the gateway saw it.
	FieldOrder []string `json:"field_order,omitempty"`
	URL        string   `json:"url"`
	// ServerElicitationID is the server's elicitationId of a url-mode
	// question, by which it later says the flow is complete; "" in the
	// other modes.
	ServerElicitationID string `json:"server_elicitation_id,omitempty"`
	// Sampling is the request to approve in mode ElicitSampling; nil in
	// the other modes.
	Sampling *SamplingPayload `json:"sampling,omitempty"`
}

// ElicitSampling is the Mode of a question that asks the user to approve a
// server's sampling request ("sampling": "ask" in mcp.json): accept
// approves, decline or cancel denies. At Stage SamplingReply an accepted
// answer's Content may hold {"reply": "..."}, the user's edit of the reply.
const ElicitSampling = "sampling"

// Stages of a sampling request a SamplingPayload shows.
const (
	// SamplingRequest: the request, before the model is asked.
	SamplingRequest = "request"
	// SamplingReply: the model's reply, before it goes back to the server.
	SamplingReply = "reply"
	// SamplingDone: answered unattended ("sampling": "auto"), with the
	// reply; the payload of a status event.
	SamplingDone = "done"
)

// SamplingPayload shows a server's sampling request (MCP
// sampling/createMessage) to the user: in a question to approve it
// (ElicitationPayload.Sampling), or as the status line of one answered
// unattended. Texts are masked and capped; Truncated says some were cut.
type SamplingPayload struct {
	// Text is the status line (stage SamplingDone).
	Text         string            `json:"text,omitempty"`
	SamplingID   string            `json:"sampling_id"`
	Server       string            `json:"server"`
	Tool         string            `json:"tool"`
	Stage        string            `json:"stage"`
	SystemPrompt string            `json:"system_prompt"`
	Messages     []SamplingMessage `json:"messages"`
	MaxTokens    int               `json:"max_tokens"`
	// Model and Reply are the model's answer (stages reply and done).
	Model     string `json:"model,omitempty"`
	Reply     string `json:"reply,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

// SamplingMessage is one message of a SamplingPayload.
type SamplingMessage struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// Elicitation answers.
const (
	ElicitAccept  = "accept"
	ElicitDecline = "decline"
	ElicitCancel  = "cancel"
)

// Question is what a tool asks the user of its run through an Asker.
type Question struct {
	// Payload is shown to the user; the Asker sets ElicitationID.
	Payload ElicitationPayload
	// Check, when set, completes and validates an accepted answer's content
	// (filling in defaults) before the Asker takes it. An error is the
	// user's to fix: the Asker reports it and keeps waiting.
	Check func(content map[string]any) (map[string]any, error)
}

// Answer is the user's reply to a Question.
type Answer struct {
	// Action is ElicitAccept, ElicitDecline or ElicitCancel.
	Action  string
	Content map[string]any
	// Reason says why an answer was given without the user (no interactive
	// user, timed out); empty when the user answered.
	Reason string
}

// Asker is implemented by an Emitter that can put a question to the user of
// a run and wait for the answer. Ask blocks until the user answers, ctx
// ends or the Asker gives up; when no one can answer it returns a decline
// with a Reason rather than an error. It is safe for concurrent use. A tool
// finds it with a type assertion on the Emitter it was given.
type Asker interface {
	Ask(ctx context.Context, q Question) (Answer, error)
}
