package session

import (
	"time"

	"github.com/elysia-go/elysia/tools"
)

// ProgressPacer is implemented by the Emitter of a call that takes the
// server's progress at another pace than ProgressInterval: the aggregate
// MCP endpoint passes each report to an MCP client, which may count them.
// A pace of zero or less means ProgressInterval.
type ProgressPacer interface {
	tools.Emitter
	ProgressPace() time.Duration
}

// paceOf is the least time between two progress events to emit.
func paceOf(emit tools.Emitter) time.Duration {
	if p, ok := emit.(ProgressPacer); ok && p.ProgressPace() > 0 {
		return p.ProgressPace()
	}
	return ProgressInterval
}
