package mcpgateway

import (
	"slices"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
)

// Logs returns the server's last log messages (notifications/message),
// oldest first, masked: those of its shared session and of every user's
// session (what an admin sees). A user's session keeps its messages while
// it lives (UserIdle, MaxUsers).
func (g *Gateway) Logs() []session.LogEntry {
	return g.logsOf(func(string) bool { return true }, func(session.LogEntry) bool { return true })
}

// LogsFor returns the log messages of Logs that belong to user (see
// LogEntry.User): those sent on user's own session, and those sent on the
// shared session during a call of theirs. An empty user gets none.
func (g *Gateway) LogsFor(user string) []session.LogEntry {
	if user == "" {
		return []session.LogEntry{}
	}
	return g.logsOf(func(u string) bool { return u == user }, func(e session.LogEntry) bool { return e.User == user })
}

// logsOf merges, oldest first, the last session.LogLines entries of g's own
// log that keep admits and of the logs of the users' sessions that child
// admits.
func (g *Gateway) logsOf(child func(user string) bool, keep func(session.LogEntry) bool) []session.LogEntry {
	out := slices.DeleteFunc(g.shared.logs(), func(e session.LogEntry) bool { return !keep(e) })
	g.mu.Lock()
	var children []*view
	for user, u := range g.users {
		if child(user) {
			children = append(children, u.v)
		}
	}
	g.mu.Unlock()
	for _, c := range children {
		out = append(out, c.logs()...)
	}
	slices.SortStableFunc(out, func(a, b session.LogEntry) int { return a.Time.Compare(b.Time) })
	if len(out) > session.LogLines {
		out = out[len(out)-session.LogLines:]
	}
	return out
}
