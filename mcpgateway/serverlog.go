package mcpgateway

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
}

const (
	// serverLogLines is how many of a server's log messages are kept.
	serverLogLines = 200
	// maxLogData bounds one kept message.
	maxLogData = 1024
	// maxCallWarnings bounds the log messages relayed to one call as
	// warning events; a server that floods its log cannot flood a user.
	maxCallWarnings = 10
)

// Logs returns the server's last log messages (notifications/message),
// oldest first, masked.
func (g *Gateway) Logs() []LogEntry { return g.conn.logs.last(serverLogLines) }

// warnLevels are the levels relayed to the user's query as warnings.
var warnLevels = []string{"warning", "error", "critical", "alert", "emergency"}

// logged handles notifications/message: the message is kept, and at
// warning and above it becomes a warning event of the call it belongs to,
// when there is exactly one call in flight on the session.
func (c *conn) logged(s *session, n mcp.JSONRPCNotification) {
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
	c.logs.add(e)
	if !slices.Contains(warnLevels, e.Level) {
		return
	}
	ac := s.callFor(context.Background())
	if ac == nil {
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
