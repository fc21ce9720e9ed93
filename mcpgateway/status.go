package mcpgateway

import (
	"cmp"
	"time"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// Status is a snapshot of a gateway for GET /api/servers. Secrets are masked.
type Status struct {
	// Name is the server's name in mcp.json; ToolName its gateway's tool
	// name, mcp_<name>.
	Name     string `json:"name"`
	ToolName string `json:"tool_name"`
	// Transport is stdio, http or sse.
	Transport string `json:"transport"`
	Enabled   bool   `json:"enabled"`
	// State is the gateway's state; connected becomes degraded while the
	// latest calls fail.
	State session.State `json:"state"`
	// ToolCount and Tools are the tools of the last list, in the server's
	// order, after allow and deny; empty before the first list.
	ToolCount int      `json:"tool_count"`
	Tools     []string `json:"tools"`
	// LastError is the last connect or session error, masked; "" after a
	// successful connect.
	LastError string        `json:"last_error"`
	Circuit   CircuitStatus `json:"circuit"`
	// Calls counts the executes that reached the server or its circuit;
	// Failures those that failed, tool errors and refusals included.
	Calls    int64 `json:"calls"`
	Failures int64 `json:"failures"`
	// RetryAt is when a failed server is tried again; nil unless in back-off.
	RetryAt *time.Time `json:"retry_at,omitempty"`
	// PID is the stdio child's process id; 0 when none runs.
	PID int `json:"pid,omitempty"`
	// ProtocolVersion is the MCP version the live session negotiated
	// (2026-07-28, 2025-11-25, ...); "" when none is live.
	ProtocolVersion string `json:"protocol_version,omitempty"`
	// MissingSecrets, in a status for one user (StatusFor), names the
	// secrets of that user's own the server takes (${user:NAME}) and the
	// user has not set; the state is then needs_sign_in. Nil otherwise.
	MissingSecrets []string `json:"missing_secrets,omitempty"`
	// Pin is the server's "pin" mode: block, warn or off; "" without a
	// PinStore.
	Pin string `json:"pin"`
	// ToolChanges are the tools whose definitions are not the pinned ones:
	// held back until approved (Held) or let through with a warning. Nil
	// when every tool matches.
	ToolChanges []ToolChange `json:"tool_changes,omitempty"`
	// DiffersByUser names the tools the server gave different users in
	// different definitions.
	DiffersByUser []string `json:"differs_by_user,omitempty"`
	// Policy, Serving and Copies describe a server with copies (mcp.json
	// "copies"): how calls pick a copy, which copies take them now
	// ("copy 2"; "" when none can), and each copy's state. Empty for a
	// server without copies.
	Policy  string       `json:"policy,omitempty"`
	Serving string       `json:"serving,omitempty"`
	Copies  []CopyStatus `json:"copies,omitempty"`
}

// CircuitStatus is the circuit breaker's state.
type CircuitStatus struct {
	// State is CircuitClosed, CircuitOpen or CircuitHalfOpen.
	State string `json:"state"`
	// RetryAt is when an open circuit lets a trial call through; nil unless
	// open.
	RetryAt *time.Time `json:"retry_at"`
}

// Status returns a snapshot of the gateway. It does no I/O.
func (g *Gateway) Status() Status {
	circuit := g.circuit()
	st := g.shared.status()
	st.Name, st.ToolName, st.Transport, st.Enabled, st.Circuit = g.cfg.Name, g.toolName, g.cfg.Transport, g.cfg.Enabled, circuit
	g.mu.Lock()
	st.Calls, st.Failures = g.stats.calls, g.stats.failures
	failing := g.stats.consecutive > 0
	g.mu.Unlock()
	if st.State == session.StateConnected && failing {
		st.State = session.StateDegraded
	}
	if g.multi() {
		st.Policy = cmp.Or(g.cfg.Policy, mcpconfig.PolicyPriority)
		st.Serving = g.servingLabel()
		st.Copies = g.copyStatuses(g.shared)
		if st.State == session.StateConnected && g.degradedNote() != "" {
			st.State = session.StateDegraded // a copy is down
		}
	}
	g.pinStatus(&st)
	return st
}
