package mcpendpoint

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// serveModernNotification accepts a 2026-07-28 client's notification (a
// POST whose Mcp-Method header and body name a notifications/ method,
// with no id) with 202 and no body, as the transport says, and reports
// true; anything else is left to mcp-go, with its body as it was. mcp-go
// refuses such a notification with 400 for want of the _meta a request
// carries, and the official Go SDK's client then closes its session: it
// sends notifications/cancelled after it closes a call's stream, which is
// the cancellation itself (the call's ctx ends with the stream).
func (e *Endpoint) serveModernNotification(w http.ResponseWriter, r *http.Request) bool {
	method := r.Header.Get(mcp.HeaderMethod)
	if r.Method != http.MethodPost || !strings.HasPrefix(method, "notifications/") {
		return false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, e.opts.MaxBodyBytes+1))
	r.Body = io.NopCloser(bytes.NewReader(body)) // as it was, for mcp-go
	if err != nil {
		return false
	}
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.JSONRPC != mcp.JSONRPC_VERSION || msg.ID != nil || msg.Method != method {
		return false // mcp-go says what is wrong with it
	}
	w.WriteHeader(http.StatusAccepted)
	return true
}
