package sessions

import (
	"testing"
)

// TestFramesResponse: what a call stream writes carries the call's answer
// when one of its events is a JSON-RPC response, whatever its lines end
// in.
func TestFramesResponse(t *testing.T) {
	for _, tc := range []struct {
		b    string
		want bool
	}{
		{"event: message\nid: s-1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n", true},
		{"event: message\r\nid: s-1\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{}}\r\n\r\n", true},
		{"data: {\"method\":\"notifications/progress\"}\r\rdata: {\"id\":1,\r\rdata: \"result\":{}}\r\r", false},
		{"data: {\"method\":\"notifications/message\",\"params\":{\"result\":1}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\ndata: \"result\":{}}\n\n", true},
		{": events 2 to 3 were dropped: \"result\"\n", false},
		{"data: {\"id\":1,\"result\":{}}\n", false}, // no event yet
	} {
		if got := framesResponse([]byte(tc.b)); got != tc.want {
			t.Errorf("framesResponse(%q) = %t, want %t", tc.b, got, tc.want)
		}
	}
}
