package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"
)

// TestServerExecuteRequestMetadata checks that a tool call made through the
// API carries the request id and the key's user to the adapter, which logs
// them with the call.
func TestServerExecuteRequestMetadata(t *testing.T) {
	tests := []struct {
		name string
		opts *Options
		key  string
		want string
	}{
		{"keyed", &Options{Keys: testKeys}, "key-alice", "alice"},
		{"admin key", &Options{Keys: testKeys}, "key-admin", AdminUser},
		{"no keys", nil, "", AdminUser},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := newHarness(t, tt.opts)
			hdr := []string{requestIDHeader, "rid-exec-1"}
			if tt.key != "" {
				hdr = append(hdr, "Authorization", "Bearer "+tt.key)
			}
			rec := hs.do(t, "POST", "/api/servers/todo/execute", `{"tool_name": "create_todo", "tool_inputs": {"title": "x"}}`, hdr...)
			if rec.Code != 200 {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			calls := hs.servers.executes()
			if len(calls) != 1 {
				t.Fatalf("%d executes, want 1", len(calls))
			}
			if got := calls[0]; got.requestID != "rid-exec-1" || got.principal != tt.want {
				t.Errorf("Execute saw request id %q, user %q; want rid-exec-1, %q", got.requestID, got.principal, tt.want)
			}
		})
	}
}

// circuitOpen is a server error that knows when the server is tried again,
// as the gateway's open circuit does.
type circuitOpen struct{ at time.Time }

func (e circuitOpen) Error() string {
	return fmt.Sprintf(`server "todo" is unavailable: circuit open after 5 consecutive failures; retrying at %s`, e.at.Format(time.TimeOnly))
}
func (e circuitOpen) Is(target error) bool { return target == ErrUnavailable }
func (e circuitOpen) RetryAt() time.Time   { return e.at }

// TestServerFailureBodies checks that 5xx answers of the MCP server routes
// say which server failed and why, and when an open circuit lets calls
// through again (with Retry-After).
func TestServerFailureBodies(t *testing.T) {
	at := time.Now().Add(30 * time.Second)
	tests := []struct {
		name       string
		err        error
		want       int
		wantErr    string
		retryAfter bool
	}{
		{"server failure", errors.New(`server "todo": call create_todo: connection reset by peer`), 502,
			`server "todo": call create_todo: connection reset by peer (request id test-req-1)`, false},
		{"unavailable", fmt.Errorf(`%w: server "todo": unavailable: disabled in mcp.json`, ErrUnavailable), 503,
			`unavailable: server "todo": unavailable: disabled in mcp.json (request id test-req-1)`, false},
		{"open circuit", fmt.Errorf("call create_todo: %w", circuitOpen{at}), 503,
			"call create_todo: " + circuitOpen{at}.Error() + "; retry after " + at.UTC().Format(time.RFC3339) + " (request id test-req-1)", true},
		{"timeout", fmt.Errorf(`server "todo": call create_todo: no answer within call_timeout 1s: %w`, context.DeadlineExceeded), 504,
			`server "todo": call create_todo: no answer within call_timeout 1s: context deadline exceeded (request id test-req-1)`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := newHarness(t, nil)
			hs.servers.setFail(tt.err)
			rec := hs.do(t, "POST", "/api/servers/todo/execute", `{"tool_name": "create_todo"}`)
			if rec.Code != tt.want {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.want, rec.Body)
			}
			var body map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			if got := body["error"]; got != tt.wantErr {
				t.Errorf("error %q\nwant  %q", got, tt.wantErr)
			}
			ra := rec.Header().Get("Retry-After")
			if !tt.retryAfter {
				if ra != "" {
					t.Errorf("Retry-After %q, want none", ra)
				}
				return
			}
			if secs, err := strconv.Atoi(ra); err != nil || secs < 1 || secs > 30 {
				t.Errorf("Retry-After %q, want 1 to 30 seconds", ra)
			}
		})
	}
}
