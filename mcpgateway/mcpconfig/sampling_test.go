package mcpconfig

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestParseSampling: "sampling" takes true (ask: the spec's human in the
// loop), "ask", "auto" (unattended) or false; anything else is an error at
// its line and column.
func TestParseSampling(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  SamplingMode
	}{
		{`true`, SamplingAsk},
		{`"ask"`, SamplingAsk},
		{`"auto"`, SamplingAuto},
		{`false`, SamplingOff},
	} {
		cfg := parseOK(t, `{"servers": {"x": {"command": "c", "sampling": `+tt.value+`}}}`, nil)
		if got := cfg.Servers[0].Sampling; got != tt.want {
			t.Errorf(`"sampling": %s = %q, want %q`, tt.value, got, tt.want)
		}
		if on := cfg.Servers[0].Sampling.Enabled(); on != (tt.want != SamplingOff) {
			t.Errorf(`"sampling": %s: Enabled = %v`, tt.value, on)
		}
	}
	if got := parseOK(t, `{"servers": {"x": {"command": "c"}}}`, nil).Servers[0].Sampling; got != SamplingOff {
		t.Errorf("no sampling key = %q, want off", got)
	}

	for _, tt := range []struct{ src, want string }{
		{`{"servers": {"x": {"command": "c", "sampling": "yes"}}}`,
			`mcp.json:1:48: server "x": sampling must be true, "ask", "auto" or false, got "yes"`},
		{`{"servers": {"x": {"command": "c",
  "sampling": 1}}}`,
			`mcp.json:2:15: server "x": sampling must be true, "ask", "auto" or false, got a number`},
		{`{"servers": {"x": {"command": "c", "sampling": "ASK"}}}`,
			`mcp.json:1:48: server "x": sampling must be true, "ask", "auto" or false, got "ASK"`},
	} {
		_, err := Parse("mcp.json", []byte(tt.src), &LoadOptions{LookupEnv: envMap(nil), BaseDir: "/base"})
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%s) = %v\nwant %s", tt.src, err, tt.want)
		}
	}
}

// TestSamplingModeJSON: a config marshalled and read back keeps its mode,
// and JSON written by hand takes the same values as mcp.json.
func TestSamplingModeJSON(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want SamplingMode
	}{{`true`, SamplingAsk}, {`false`, SamplingOff}, {`"ask"`, SamplingAsk}, {`"auto"`, SamplingAuto}, {`null`, SamplingOff}} {
		var m SamplingMode
		if err := json.Unmarshal([]byte(tt.in), &m); err != nil || m != tt.want {
			t.Errorf("Unmarshal(%s) = %q, %v; want %q", tt.in, m, err, tt.want)
		}
	}
	var m SamplingMode
	if err := json.Unmarshal([]byte(`"always"`), &m); err == nil || !strings.Contains(err.Error(), `got "always"`) {
		t.Errorf(`Unmarshal("always") = %v, want an error naming the value`, err)
	}
	b, err := json.Marshal(ServerConfig{Name: "x", Sampling: SamplingAuto})
	if err != nil || !strings.Contains(string(b), `"sampling":"auto"`) {
		t.Errorf("Marshal = %s, %v", b, err)
	}
}

// TestValidateSampling: a Config built in code with an unknown mode is
// refused.
func TestValidateSampling(t *testing.T) {
	cfg := Config{Servers: []ServerConfig{{Name: "x", Transport: TransportStdio, Command: "c", Sampling: "sometimes"}}}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `sampling must be true, "ask", "auto" or false, got "sometimes"`) {
		t.Errorf("Validate = %v", err)
	}
}
