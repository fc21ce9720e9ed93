// Package jsonrpc reads and writes the JSON-RPC 2.0 messages of the MCP
// endpoint: a message is decoded once, its params, result and error kept
// as the client sent them until a handler wants them, and every answer the
// endpoint writes itself is built here.
package jsonrpc

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// Version is the only JSON-RPC version MCP speaks.
const Version = "2.0"

// MCP's keys of a 2026-07-28 request's params._meta.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
)

// Message is one JSON-RPC message: a request (Method and ID), a
// notification (Method, no ID) or a response (ID and Result or Error).
// Params, Result and Error are the bytes as sent.
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// Decode decodes b as one JSON-RPC 2.0 message. It reports false for
// anything else: not JSON, a batch, another version, or a message that is
// neither a request, a notification nor a response.
func Decode(b []byte) (*Message, bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return nil, false
	}
	m := new(Message)
	if json.Unmarshal(b, m) != nil || m.JSONRPC != Version {
		return nil, false
	}
	if m.Method == "" && !m.IsResponse() {
		return nil, false
	}
	return m, true
}

// IsResponse reports whether b is one JSON-RPC response.
func IsResponse(b []byte) bool {
	m, ok := Decode(b)
	return ok && m.IsResponse()
}

// HasID reports whether m carries an id that is not null.
func (m *Message) HasID() bool { return len(m.ID) > 0 && string(m.ID) != "null" }

// IsRequest reports whether m is a request: a method and an id.
func (m *Message) IsRequest() bool { return m.Method != "" && m.HasID() }

// IsNotification reports whether m is a notification: a method and no id.
func (m *Message) IsNotification() bool { return m.Method != "" && m.ID == nil }

// IsResponse reports whether m is a response: an id and a result or an
// error, and no method.
func (m *Message) IsResponse() bool {
	return m.Method == "" && m.ID != nil && (m.Result != nil || m.Error != nil)
}

// StringOrNumberID reports whether m's id is a string or a number, as a
// request's must be.
func (m *Message) StringOrNumberID() bool {
	if !m.HasID() {
		return false
	}
	switch c := m.ID[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return true
	}
	return false
}

// DecodeParams decodes m's params into v; absent params leave v as it is.
func (m *Message) DecodeParams(v any) error {
	if len(m.Params) == 0 || string(m.Params) == "null" {
		return nil
	}
	return json.Unmarshal(m.Params, v)
}

// Meta is what the endpoint reads of a request's params._meta.
type Meta struct {
	// ProtocolVersion is the 2026-07-28 request's version, "" for a
	// request of a session.
	ProtocolVersion string `json:"io.modelcontextprotocol/protocolVersion"`
	// ClientCapabilities are the 2026-07-28 request's, as sent.
	ClientCapabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
}

// Meta returns m's params._meta; a message without one, or one that does
// not decode, has the zero Meta.
func (m *Message) Meta() Meta {
	if !bytes.Contains(m.Params, []byte(`"_meta"`)) {
		return Meta{}
	}
	var p struct {
		Meta Meta `json:"_meta"`
	}
	_ = m.DecodeParams(&p)
	return p.Meta
}

// WithID returns m with id as its id, encoded; m is left as it is.
func (m *Message) WithID(id json.RawMessage) []byte {
	c := *m
	c.ID = id
	b, _ := json.Marshal(&c) // raw values decoded from JSON always encode
	return b
}

// WithResult returns m, a response, with its result or error replaced by
// result or, when rpcErr is set, by rpcErr; m is left as it is.
func (m *Message) WithResult(result, rpcErr json.RawMessage) []byte {
	c := *m
	c.Result, c.Error = result, nil
	if rpcErr != nil {
		c.Result, c.Error = nil, rpcErr
	}
	b, _ := json.Marshal(&c)
	return b
}

// ErrorObject is a JSON-RPC error.
type ErrorObject struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// Response encodes the response of id (null when nil or not JSON) with
// result.
func Response(id json.RawMessage, result any) []byte {
	return encode(id, "result", result)
}

// ErrorResponse encodes the error response of id (null when nil or not
// JSON): code, message and, when not nil, data.
func ErrorResponse(id json.RawMessage, code int, message string, data any) []byte {
	return encode(id, "error", ErrorObject{Code: code, Message: message, Data: data})
}

// WriteError answers an HTTP request with status and a JSON-RPC error of
// code and msg, of no request id.
func WriteError(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(ErrorResponse(nil, code, msg, nil)) // a client gone: nothing to tell
}

// WriteUnavailable answers an HTTP request 503 with a JSON-RPC error of
// code and msg and a Retry-After of after (whole seconds, at least one):
// the request may succeed later, here or on another replica.
func WriteUnavailable(w http.ResponseWriter, after time.Duration, code int, msg string) {
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(after/time.Second))))
	WriteError(w, http.StatusServiceUnavailable, code, msg)
}

func encode(id json.RawMessage, key string, v any) []byte {
	if len(id) == 0 || !json.Valid(id) {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(map[string]any{"jsonrpc": Version, "id": id, key: v})
	if err != nil {
		b, _ = json.Marshal(map[string]any{"jsonrpc": Version, "id": id,
			"error": ErrorObject{Code: -32603, Message: "the answer could not be encoded: " + err.Error()}})
	}
	return b
}
