package web

import (
	"testing"
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
