package session

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/tools"
)

// LogEntry is one notifications/message a server sent, masked and cut.
type LogEntry struct {
	Time   time.Time `json:"time"`
	Level  string    `json:"level"`
	Logger string    `json:"logger,omitempty"`
	Data   string    `json:"data"`
	// User is whom the message belongs to: the user of the session it
	// came on (a session per user), or of the one call in flight on a
	// shared session when it came; "" when nobody's (it is then shown to
	// admins only).
	User string `json:"user,omitempty"`
}

const (
	// LogLines is how many of a server's log messages a Conn keeps.
	LogLines = 200
	// maxLogData bounds one kept message.
	maxLogData = 1024
	// maxCallWarnings bounds the log messages relayed to one call as
	// warning events; a server that floods its log cannot flood a user.
	maxCallWarnings = 10
)

// warnLevels are the levels relayed to the user's query as warnings.
var warnLevels = []string{"warning", "error", "critical", "alert", "emergency"}

// logged handles notifications/message: the message is kept, and at
// warning and above it becomes a warning event of the call it belongs to,
// when there is exactly one call in flight on the session.
func (c *Conn) logged(s *Session, n mcp.JSONRPCNotification) {
	f := n.Params.AdditionalFields
	level, _ := f["level"].(string)
	logger, _ := f["logger"].(string)
	data, ok := f["data"].(string)
	if !ok {
		b, _ := json.Marshal(f["data"])
		data = string(b)
	}
	// Mask before cutting, as progressed does.
	e := LogEntry{Time: time.Now(), Level: truncate(level, 16), Logger: truncate(c.mask(logger), 64), Data: truncate(c.mask(data), maxLogData)}
	ac := s.callFor(context.Background())
	e.User = c.opts.User // a user's own session: all of it is theirs
	if e.User == "" && ac != nil {
		e.User = ac.user
	}
	c.logs.Add(e)
	if ac != nil {
		toClientLogger(ac, e)
	}
	if !slices.Contains(warnLevels, e.Level) || ac == nil {
		return
	}
	ac.mu.Lock()
	ac.warnings++
	k := ac.warnings
	ac.mu.Unlock()
	switch {
	case k < maxCallWarnings:
		ac.relay.event(tools.NewWarning(fmt.Sprintf("%s logged (%s): %s", c.cfg.Name, e.Level, truncate(e.Data, 300))))
	case k == maxCallWarnings:
		ac.relay.event(tools.NewWarning(fmt.Sprintf("%s keeps logging; further messages are in its log only", c.cfg.Name)))
	}
}
