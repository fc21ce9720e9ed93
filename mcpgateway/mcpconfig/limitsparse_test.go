package mcpconfig

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseLimits: max_message_size and the sampling caps are whole
// numbers within their bounds; anything else is a config error naming the
// key, its bounds and where it is.
func TestParseLimits(t *testing.T) {
	cfg := parseOK(t, `{"servers": {"x": {"command": "c", "sampling": true, "max_message_size": 1048576,
		"sampling_per_call": 2, "sampling_per_minute": 10, "sampling_max_input": 4096}}}`, nil)
	s := cfg.Servers[0]
	if s.MaxMessageSize != 1<<20 || s.SamplingPerCall != 2 || s.SamplingPerMinute != 10 || s.SamplingMaxInput != 4096 {
		t.Errorf("parsed %+v", s)
	}
	if len(cfg.Warnings) > 0 {
		t.Errorf("warnings %q", cfg.Warnings)
	}
	if got := s.MessageLimit(); got != 1<<20 {
		t.Errorf("MessageLimit = %d", got)
	}
	if got := (ServerConfig{}).MessageLimit(); got != DefaultMaxMessageSize {
		t.Errorf("default MessageLimit = %d, want %d", got, DefaultMaxMessageSize)
	}
	if perCall, perMinute, input := (ServerConfig{}).SamplingLimits(); perCall != 5 || perMinute != 30 || input != 64<<10 {
		t.Errorf("default SamplingLimits = %d, %d, %d; want 5, 30, 65536", perCall, perMinute, input)
	}

	for _, tt := range []struct{ src, want string }{
		{`{"servers": {"x": {"command": "c", "max_message_size": 100}}}`,
			`mcp.json:1:56: server "x": max_message_size must be a whole number of bytes from 4096 to 1073741824, got 100`},
		{`{"servers": {"x": {"command": "c", "max_message_size": "4MiB"}}}`,
			`mcp.json:1:56: server "x": max_message_size must be a whole number of bytes from 4096 to 1073741824, got a string`},
		{`{"servers": {"x": {"command": "c", "sampling": true, "sampling_per_call": 0}}}`,
			`mcp.json:1:75: server "x": sampling_per_call must be a whole number from 1 to 100, got 0`},
		{`{"servers": {"x": {"command": "c", "sampling": true, "sampling_per_minute": 2.5}}}`,
			`mcp.json:1:77: server "x": sampling_per_minute must be a whole number from 1 to 1000, got 2.5`},
		{`{"servers": {"x": {"command": "c", "sampling": true, "sampling_max_input": 1e9}}}`,
			`mcp.json:1:76: server "x": sampling_max_input must be a whole number of bytes from 1024 to 4194304, got 1e9`},
	} {
		_, err := Parse("mcp.json", []byte(tt.src), &LoadOptions{LookupEnv: envMap(nil), BaseDir: "/base"})
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%s) = %v\nwant %s", tt.src, err, tt.want)
		}
	}

	cfg = parseOK(t, `{"servers": {"x": {"command": "c", "sampling_per_call": 3}, "y": {"url": "http://h/mcp", "max_message_size": 8192}}}`, nil)
	want := []string{
		`mcp.json:1:57: server "x": sampling_per_call ignored: sampling is off (set "sampling": true)`,
		`mcp.json:1:110: server "y": max_message_size ignored: it bounds the messages of stdio servers`,
	}
	if diff := cmp.Diff(want, cfg.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

// TestValidateLimits: a Config built in code is checked the same way.
func TestValidateLimits(t *testing.T) {
	cfg := Config{Servers: []ServerConfig{{Name: "x", Transport: TransportStdio, Command: "c",
		MaxMessageSize: -1, SamplingPerCall: 1000, SamplingMaxInput: 1 << 30}}}
	err := cfg.Validate()
	for _, want := range []string{"max_message_size must be", "sampling_per_call must be", "sampling_max_input must be"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want it to say %q", err, want)
		}
	}
}
