package mcpconfig

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestParsePin: "pin" takes "block" (the default), "warn" or "off";
// anything else is an error at its line and column.
func TestParsePin(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  PinMode
	}{
		{`"block"`, PinBlock},
		{`"warn"`, PinWarn},
		{`"off"`, PinOff},
	} {
		cfg := parseOK(t, `{"servers": {"x": {"command": "c", "pin": `+tt.value+`}}}`, nil)
		if got := cfg.Servers[0].Pin; got != tt.want {
			t.Errorf(`"pin": %s = %q, want %q`, tt.value, got, tt.want)
		}
	}
	if got := parseOK(t, `{"servers": {"x": {"command": "c"}}}`, nil).Servers[0].Pin; got != PinBlock || got.String() != "block" {
		t.Errorf("no pin key = %q (%s), want block", got, got)
	}

	for _, tt := range []struct{ src, want string }{
		{`{"servers": {"x": {"command": "c", "pin": "yes"}}}`,
			`mcp.json:1:43: server "x": pin must be "block", "warn" or "off", got "yes"`},
		{`{"servers": {"x": {"command": "c",
  "pin": false}}}`,
			`mcp.json:2:10: server "x": pin must be "block", "warn" or "off", got a boolean`},
		{`{"servers": {"x": {"command": "c", "pin": "WARN"}}}`,
			`mcp.json:1:43: server "x": pin must be "block", "warn" or "off", got "WARN"`},
	} {
		_, err := Parse("mcp.json", []byte(tt.src), &LoadOptions{LookupEnv: envMap(nil), BaseDir: "/base"})
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%s) = %v\nwant %s", tt.src, err, tt.want)
		}
	}
}

// TestPinModeJSON: a config marshalled and read back keeps its mode, and
// a Config built in code with an unknown mode is refused.
func TestPinModeJSON(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want PinMode
	}{{`"block"`, PinBlock}, {`"warn"`, PinWarn}, {`"off"`, PinOff}, {`null`, PinBlock}} {
		var m PinMode
		if err := json.Unmarshal([]byte(tt.in), &m); err != nil || m != tt.want {
			t.Errorf("Unmarshal(%s) = %q, %v; want %q", tt.in, m, err, tt.want)
		}
	}
	var m PinMode
	if err := json.Unmarshal([]byte(`"never"`), &m); err == nil || !strings.Contains(err.Error(), `got "never"`) {
		t.Errorf(`Unmarshal("never") = %v, want an error naming the value`, err)
	}
	b, err := json.Marshal(ServerConfig{Name: "x", Pin: PinWarn})
	if err != nil || !strings.Contains(string(b), `"pin":"warn"`) {
		t.Errorf("Marshal = %s, %v", b, err)
	}
	cfg := Config{Servers: []ServerConfig{{Name: "x", Transport: TransportStdio, Command: "c", Pin: "sometimes"}}}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `pin must be "block", "warn" or "off", got "sometimes"`) {
		t.Errorf("Validate = %v", err)
	}
}
