package mcpconfig

import (
	"strconv"
	"time"
)

// Expose modes: what the aggregate MCP endpoint lists (mcp.json's top-level
// "expose" block, DESIGN.md "The aggregate MCP endpoint").
const (
	// ExposeAuto lists every tool while there are at most MaxTools of
	// them, else the two search tools.
	ExposeAuto = "auto"
	// ExposeTools lists every server's tools, each as
	// <prefix><separator><tool>.
	ExposeTools = "tools"
	// ExposeGateways lists the agent's own gateway tools, mcp_<server>.
	ExposeGateways = "gateways"
	// ExposeSearch lists search_tools and call_tool only.
	ExposeSearch = "search"
)

// Expose defaults and bounds.
const (
	// DefaultExposeMaxTools is Expose.MaxTools when mcp.json gives none.
	DefaultExposeMaxTools = 100
	// MaxExposeMaxTools bounds "max_tools": past it no client holds the list.
	MaxExposeMaxTools = 10000
	// DefaultExposeSeparator is Expose.Separator when mcp.json gives none.
	DefaultExposeSeparator = "__"
	// maxSeparator bounds "separator" in bytes.
	maxSeparator = 8
)

// Expose is the "expose" block of mcp.json: how the aggregate MCP endpoint
// presents the servers to MCP clients. Parse fills in the defaults, so a
// parsed Config's Expose is always complete.
type Expose struct {
	// Mode is ExposeAuto, ExposeTools, ExposeGateways or ExposeSearch.
	Mode string `json:"mode"`
	// MaxTools is the most tools auto mode lists before it switches to
	// search (1..MaxExposeMaxTools).
	MaxTools int `json:"max_tools"`
	// Agent adds the ask tool, the decision-tree agent.
	Agent bool `json:"agent"`
	// Separator joins a server's prefix and a tool's name: characters from
	// [A-Za-z0-9_-], 1 to 8 of them.
	Separator string `json:"separator"`
	// StreamPoll, when set, is how long the endpoint keeps a call's
	// resumable stream open before it closes the connection and lets the
	// client resume it (SEP-1699 polling), for proxies that cut long
	// requests; the call goes on meanwhile. Zero keeps the stream open
	// until the answer. mcp.json gives it in seconds.
	StreamPoll time.Duration `json:"stream_poll,omitempty"`
}

// DefaultExpose is the Expose of an mcp.json without an "expose" block.
func DefaultExpose() Expose {
	return Expose{Mode: ExposeAuto, MaxTools: DefaultExposeMaxTools, Agent: true, Separator: DefaultExposeSeparator}
}

// validToolChars reports whether s is made of [A-Za-z0-9_-] only.
func validToolChars(s string) bool {
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
		if !ok {
			return false
		}
	}
	return true
}

// expose reads the top-level "expose" block into p.cfg.Expose, on top of
// the defaults, reporting each bad value at its position.
func (p *parser) expose(v *jnode) {
	if !p.is(v, jObject, "", "expose") {
		return
	}
	e := &p.cfg.Expose
	for _, m := range v.members {
		switch m.key {
		case "mode":
			if !p.is(m.val, jString, "", "expose.mode") {
				continue
			}
			switch m.val.str {
			case ExposeAuto, ExposeTools, ExposeGateways, ExposeSearch:
				e.Mode = m.val.str
			default:
				p.errAt(m.val.off, "", "expose.mode %q unknown (want auto, tools, gateways or search)", m.val.str)
			}
		case "max_tools":
			n, err := strconv.Atoi(m.val.str)
			if m.val.kind != jNumber || err != nil || n < 1 || n > MaxExposeMaxTools {
				p.errAt(m.val.off, "", "expose.max_tools must be a whole number from 1 to %d", MaxExposeMaxTools)
				continue
			}
			e.MaxTools = n
		case "agent":
			if p.is(m.val, jBool, "", "expose.agent") {
				e.Agent = m.val.boolean
			}
		case "separator":
			if !p.is(m.val, jString, "", "expose.separator") {
				continue
			}
			if s := m.val.str; s == "" || len(s) > maxSeparator || !validToolChars(s) {
				p.errAt(m.val.off, "", "expose.separator %q must be 1 to %d characters from [A-Za-z0-9_-]", s, maxSeparator)
				continue
			}
			e.Separator = m.val.str
		case "stream_poll":
			if f, err := strconv.ParseFloat(m.val.str, 64); m.val.kind == jNumber && err == nil && f == 0 {
				e.StreamPoll = 0 // off, as without the key
				continue
			}
			d, ok := seconds(m.val)
			if !ok {
				p.errAt(m.val.off, "", "expose.stream_poll must be a number of seconds from 0 (off) to %v", maxTimeout)
				continue
			}
			e.StreamPoll = d
		default:
			p.warnAt(m.keyOff, "", "unknown key %q in expose ignored (want mode, max_tools, agent, separator or stream_poll)", m.key)
		}
	}
}

// prefix reads a server's "prefix": what its tools are named after on the
// aggregate endpoint in place of the server's name; "" for none.
func (sp *serverParse) prefix(v *jnode) {
	if !sp.p.is(v, jString, sp.name, "prefix") {
		return
	}
	s := v.str
	if len(s) > 32 || !validToolChars(s) {
		sp.p.errAt(v.off, sp.name, "prefix %q must be at most 32 characters from [A-Za-z0-9_-]", s)
		return
	}
	sp.s.Prefix = &s
}

// ExposedPrefix returns what the aggregate endpoint names s's tools after:
// its "prefix" when set (maybe ""), else its name.
func (s ServerConfig) ExposedPrefix() string {
	if s.Prefix != nil {
		return *s.Prefix
	}
	return s.Name
}

func equalPrefix(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
