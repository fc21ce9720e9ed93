package mcpconfig

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestParseExpose: the top-level "expose" block and a server's "prefix",
// with their defaults, and a config error at the position of each bad value.
func TestParseExpose(t *testing.T) {
	cfg := parseOK(t, `{"servers": {"x": {"command": "c"}}}`, nil)
	if diff := cmp.Diff(DefaultExpose(), cfg.Expose); diff != "" {
		t.Errorf("default expose (-want +got):\n%s", diff)
	}
	if got := cfg.Servers[0].ExposedPrefix(); got != "x" {
		t.Errorf("ExposedPrefix without prefix = %q, want the name", got)
	}
	cfg = parseOK(t, `{"expose": {"mode": "search", "max_tools": 40, "agent": false, "separator": "-", "stream_poll": 0.5},
		"servers": {"x": {"command": "c", "prefix": ""}, "y": {"command": "c", "prefix": "why"}}}`, nil)
	want := Expose{Mode: ExposeSearch, MaxTools: 40, Agent: false, Separator: "-", StreamPoll: 500 * time.Millisecond}
	if diff := cmp.Diff(want, cfg.Expose); diff != "" {
		t.Errorf("expose (-want +got):\n%s", diff)
	}
	if x, y := cfg.Servers[0].ExposedPrefix(), cfg.Servers[1].ExposedPrefix(); x != "" || y != "why" {
		t.Errorf("prefixes %q, %q; want \"\" and \"why\"", x, y)
	}
	if cfg.Servers[0].Equal(parseOK(t, `{"servers": {"x": {"command": "c"}}}`, nil).Servers[0]) {
		t.Error("a server whose prefix changed is Equal to the old one: its gateway would not be replaced")
	}

	for _, tt := range []struct{ src, want string }{
		{`{"expose": {"mode": "all"}, "servers": {}}`,
			`mcp.json:1:21: expose.mode "all" unknown (want auto, tools, gateways or search)`},
		{`{"expose": {"max_tools": 0}, "servers": {}}`,
			`mcp.json:1:26: expose.max_tools must be a whole number from 1 to 10000`},
		{`{"expose": {"separator": "::"}, "servers": {}}`,
			`mcp.json:1:26: expose.separator "::" must be 1 to 8 characters from [A-Za-z0-9_-]`},
		{`{"expose": {"stream_poll": -1}, "servers": {}}`,
			`mcp.json:1:28: expose.stream_poll must be a number of seconds from 0 (off) to 24h0m0s`},
		{`{"expose": [], "servers": {}}`,
			`mcp.json:1:12: expose must be an object, got an array`},
		{`{"servers": {"x": {"command": "c", "prefix": "a b"}}}`,
			`mcp.json:1:46: server "x": prefix "a b" must be at most 32 characters from [A-Za-z0-9_-]`},
	} {
		_, err := Parse("mcp.json", []byte(tt.src), &LoadOptions{LookupEnv: envMap(nil), BaseDir: "/base"})
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%s) = %v\nwant %s", tt.src, err, tt.want)
		}
	}
	cfg = parseOK(t, `{"expose": {"modes": "x"}, "servers": {}}`, nil)
	if diff := cmp.Diff([]string{`mcp.json:1:13: unknown key "modes" in expose ignored (want mode, max_tools, agent, separator or stream_poll)`}, cfg.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}
