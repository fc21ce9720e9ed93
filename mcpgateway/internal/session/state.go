package session

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
