package mcpgateway

import "time"

// State is where a gateway stands, as /api/servers shows it.
type State string

// Gateway states. Closed is internal: a closed gateway is no longer listed.
const (
	StateIdle        State = "idle"          // no session; the next call connects
	StateConnecting  State = "connecting"    // a connect attempt is running
	StateConnected   State = "connected"     // a session is up
	StateDegraded    State = "degraded"      // a session is up but recent calls failed
	StateFailed      State = "failed"        // unresolved config, a failed connect until the next attempt, back-off
	StateDisabled    State = "disabled"      // "enabled": false in mcp.json
	StateNeedsSignIn State = "needs_sign_in" // the asking user must sign in (OAuth)
	StateClosed      State = "closed"
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
	State State `json:"state"`
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
	// MissingSecrets, in a status for one user (StatusFor), names the
	// secrets of that user's own the server takes (${user:NAME}) and the
	// user has not set; the state is then needs_sign_in. Nil otherwise.
	MissingSecrets []string `json:"missing_secrets,omitempty"`
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
	cs := g.conn.status()
	g.mu.Lock()
	defer g.mu.Unlock()
	st := Status{
		Name:      g.cfg.Name,
		ToolName:  g.toolName,
		Transport: g.cfg.Transport,
		Enabled:   g.cfg.Enabled,
		State:     cs.state,
		Tools:     []string{},
		LastError: cs.lastErr,
		Circuit:   circuit,
		Calls:     g.stats.calls,
		Failures:  g.stats.failures,
		PID:       cs.pid,
	}
	if g.cache != nil {
		st.Tools = append(st.Tools, g.cache.names...)
		st.ToolCount = len(st.Tools)
	}
	if st.State == StateConnected && g.stats.consecutive > 0 {
		st.State = StateDegraded
	}
	if !cs.retryAt.IsZero() {
		t := cs.retryAt
		st.RetryAt = &t
	}
	return st
}
