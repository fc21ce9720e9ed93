package stream

import (
	"errors"

	"github.com/elysia-go/elysia/tools"
)

// errShuttingDown is the cause of a run's ctx ended by web's Server.Drain.
var errShuttingDown = errors.New("the service is shutting down")

// shutdownText is the error event a query stopped by the drain sends
// before its completed.
const shutdownText = "the service is shutting down: this query was stopped before it finished; send it again in a moment"

// goingAwayReason is the reason of the close frame a query socket sends
// when the server drains (status 1001, going away).
const goingAwayReason = "the service is shutting down"

// shutdownEnvelopes are the events a query stopped by the drain ends with: an
// error saying why, then completed.
func shutdownEnvelopes(userID, convID, queryID string) []tools.Envelope {
	out := []tools.Envelope{errorEnvelope(shutdownText, userID, convID, queryID)}
	if env, err := tools.NewEnvelope(tools.Event{Type: tools.EventCompleted, Payload: map[string]any{}}, userID, convID, queryID); err == nil {
		out = append(out, env)
	}
	return out
}

// begin counts a query starting on the socket; false means the socket is
// going away and takes no more.
func (ws *wsSession) begin() bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.goingAway {
		return false
	}
	ws.queries++
	return true
}

// end counts the end of a query begun with begin, once it has queued its
// last event.
func (ws *wsSession) end() {
	ws.mu.Lock()
	ws.queries--
	ws.mu.Unlock()
	ws.poke()
}

// goAway asks the socket to close with status 1001 once its queries have
// ended. Safe to call from any goroutine, more than once.
func (ws *wsSession) goAway() {
	ws.mu.Lock()
	ws.goingAway = true
	ws.mu.Unlock()
	ws.poke()
}

// leaving reports whether the socket is going away with no query left.
func (ws *wsSession) leaving() bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.goingAway && ws.queries == 0
}

func (ws *wsSession) poke() {
	select {
	case ws.wake <- struct{}{}:
	default: // the writer has a wake-up pending already
	}
}
