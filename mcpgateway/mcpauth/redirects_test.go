package mcpauth

import (
	"net/url"
	"testing"
)

// TestCheckEndpoint checks which URLs discovery and the OAuth requests
// may go to, for a remote https server and for a loopback one.
func TestCheckEndpoint(t *testing.T) {
	remote, _ := url.Parse("https://mcp.example.com/mcp")
	local, _ := url.Parse("http://127.0.0.1:8080/mcp")
	tests := []struct {
		endpoint          string
		remoteOK, localOK bool
	}{
		{"https://as.example.com/token", true, true},
		{"http://as.example.com/token", false, false},
		{"http://127.0.0.1:9000/token", false, true},
		{"http://[::1]:9000/token", false, true},
		{"http://localhost:9000/token", false, true},
		{"https://127.0.0.1/token", false, true},
		{"https://localhost./token", false, true},
		{"https://as.localhost/token", false, true},
		{"https://0.0.0.0/token", false, true},
		{"https://[::]/token", false, true},
		{"/token", false, false},
	}
	for _, tt := range tests {
		for _, c := range []struct {
			server *url.URL
			ok     bool
		}{{remote, tt.remoteOK}, {local, tt.localOK}} {
			if err := checkEndpoint(tt.endpoint, c.server); (err == nil) != c.ok {
				t.Errorf("checkEndpoint(%q) for %s = %v, want ok %v", tt.endpoint, c.server, err, c.ok)
			}
		}
	}
}
