package mcpconfig

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestTimeouts(t *testing.T) {
	tests := []struct {
		name          string
		s             ServerConfig
		connect, call time.Duration
	}{
		{"stdio defaults", ServerConfig{Transport: TransportStdio}, 30 * time.Second, 60 * time.Second},
		{"http defaults", ServerConfig{Transport: TransportHTTP}, 5 * time.Second, 60 * time.Second},
		{"sse defaults", ServerConfig{Transport: TransportSSE}, 5 * time.Second, 60 * time.Second},
		{"set", ServerConfig{Transport: TransportSSE, ConnectTimeout: time.Second, CallTimeout: 2 * time.Second}, time.Second, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			connect, call := tt.s.Timeouts()
			if connect != tt.connect || call != tt.call {
				t.Errorf("Timeouts() = %v, %v, want %v, %v", connect, call, tt.connect, tt.call)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	ok := ServerConfig{Name: "a", Transport: TransportStdio, Command: "x", Line: 1, Column: 2}
	tests := []struct {
		name    string
		servers []ServerConfig
		want    []string
	}{
		{"valid", []ServerConfig{ok}, nil},
		{"problems", []ServerConfig{
			{Name: "t", Transport: "tcp", Line: 3, Column: 4},
			{Name: "u", Transport: TransportHTTP, URL: "mailto:x", Line: 5, Column: 6},
			{Name: "g", Transport: TransportStdio, Command: "x", Deny: []string{""}, CallTimeout: -time.Second, Line: 7, Column: 8},
		}, []string{
			`mcp.json:3:4: server "t": unknown type "tcp" (want stdio, http or sse)`,
			`mcp.json:5:6: server "u": invalid url "mailto:x": want an http:// or https:// url`,
			`mcp.json:7:8: server "g": bad tools.deny pattern "" (want a name or a path.Match glob)`,
			`mcp.json:7:8: server "g": call_timeout must be a number of seconds > 0 and <= 86400`,
		}},
		{"duplicates and collisions", []ServerConfig{ok, ok, {Name: "A", Transport: TransportStdio, Command: "x", Line: 9, Column: 1}}, []string{
			`mcp.json:1:2: server "a": server name given twice (first at 1:2)`,
			`mcp.json:9:1: server "A": tool name "mcp_a" collides with server "a" at 1:2; rename one`,
		}},
		{"no name", []ServerConfig{{Transport: TransportStdio, Command: "x"}}, []string{`mcp.json: missing server name`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := (&Config{File: "mcp.json", Servers: tt.servers}).Validate()
			var got []string
			if err != nil {
				if !errors.Is(err, ErrInvalidConfig) {
					t.Errorf("Validate error %v does not match ErrInvalidConfig", err)
				}
				for _, ce := range configErrors(t, err) {
					got = append(got, ce.Error())
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestToolName(t *testing.T) {
	for in, want := range map[string]string{"todo": "mcp_todo", "api-ai-mcp": "mcp_api_ai_mcp", "My Server.v2": "mcp_my_server_v2"} {
		if got := ToolName(in); got != want {
			t.Errorf("ToolName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestConfigError(t *testing.T) {
	inner := errors.New("boom")
	tests := []struct {
		err  *ConfigError
		want string
	}{
		{&ConfigError{File: "mcp.json", Line: 12, Column: 5, Server: "x", Msg: `unknown type "foo" (want stdio, http or sse)`},
			`mcp.json:12:5: server "x": unknown type "foo" (want stdio, http or sse)`},
		{&ConfigError{File: "mcp.json", Msg: "cannot read: boom", Err: inner}, "mcp.json: cannot read: boom"},
		{&ConfigError{Msg: "bare"}, "bare"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
		if !errors.Is(tt.err, ErrInvalidConfig) {
			t.Errorf("%v does not match ErrInvalidConfig", tt.err)
		}
	}
	if !errors.Is(tests[1].err, inner) {
		t.Errorf("ConfigError does not unwrap to its Err")
	}
}
