package session

import (
	"time"

	"github.com/elysia-go/elysia/tools"
)

// ProgressPacer is implemented by the Emitter of a call that takes the
// server's progress at another pace than ProgressInterval: the aggregate
// MCP endpoint passes each report to an MCP client, which may count them,
// so a burst of up to PacedBurst reports between two paces reaches it
// whole (more are coalesced into the latest). A pace of zero or less
// means ProgressInterval.
type ProgressPacer interface {
	tools.Emitter
	ProgressPace() time.Duration
}

// PacedBurst is how many progress reports of one call a ProgressPacer gets
// at each pace at most; a person's stream gets the latest one only.
const PacedBurst = 8

// paceOf is the least time between two progress emissions, and how many
// reports each may carry.
func paceOf(emit tools.Emitter) (time.Duration, int) {
	if p, ok := emit.(ProgressPacer); ok {
		if pace := p.ProgressPace(); pace > 0 {
			return pace, PacedBurst
		}
		return ProgressInterval, PacedBurst
	}
	return ProgressInterval, 1
}
