package mcpgateway

import (
	"slices"
	"time"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
)

// CopyStatus is one copy of a server in its Status.
type CopyStatus struct {
	// Copy is its number, 1 for the server's own keys; Label says it
	// for people ("copy 2").
	Copy  int    `json:"copy"`
	Label string `json:"label"`
	// Transport is stdio, http or sse; Where its URL or command line as
	// written in mcp.json, masked.
	Transport string `json:"transport"`
	Where     string `json:"where"`
	// State is its shared session's state; down while failed over from.
	State session.State `json:"state"`
	// Serving is set on the copies that take calls now.
	Serving bool          `json:"serving"`
	Down    bool          `json:"down"`
	Circuit CircuitStatus `json:"circuit"`
	// Calls and Failures count the executes sent to it.
	Calls    int64  `json:"calls"`
	Failures int64  `json:"failures"`
	LastErr  string `json:"last_error,omitempty"`
	// DownSince is when it went down; nil while up.
	DownSince *time.Time `json:"down_since,omitempty"`
}

// copyStatuses returns the status of each copy as v sees it; nil for a
// server without copies.
func (g *Gateway) copyStatuses(v *view) []CopyStatus {
	if !g.multi() {
		return nil
	}
	serving := g.servingCopies()
	out := make([]CopyStatus, 0, len(g.copies))
	for _, c := range g.copies {
		cs := v.conns[c.index].Status()
		st := CopyStatus{Copy: c.index + 1, Label: c.label, Transport: c.cfg.Transport, Where: c.where, State: cs.State,
			Circuit: c.circuitStatus(), LastErr: g.mask(cs.LastErr)}
		st.Serving = slices.Contains(serving, c)
		c.mu.Lock()
		st.Calls, st.Failures = c.stats.calls, c.stats.failures
		if c.down {
			st.Down = true
			t := c.downSince
			st.DownSince = &t
			st.LastErr = c.downErr
			st.State = session.StateFailed
		}
		c.mu.Unlock()
		out = append(out, st)
	}
	return out
}
