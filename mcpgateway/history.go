package mcpgateway

import (
	"cmp"
	"slices"
	"strings"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
)

// HistoryEntry is one message of a server's history: a request the gateway
// sent with its answer, or a notification the server sent; masked and cut.
type HistoryEntry = session.HistoryEntry

// historyShown bounds the requests, and the notifications, of a History.
const historyShown = 2 * session.HistoryLen

// History is a window into the wire to one server, what the panel's
// History pane shows: the gateway's last requests with their answers, the
// server's last notifications, and what its stdio processes last wrote to
// stderr. Everything is masked.
type History struct {
	// Requests and Notifications are the newest historyShown of each,
	// oldest first.
	Requests      []HistoryEntry
	Notifications []HistoryEntry
	// Stderr is the last lines of each stdio process running now.
	Stderr []StderrTail
}

// StderrTail is the last lines one stdio process of a server wrote to
// stderr, masked.
type StderrTail struct {
	// User is whose session the process serves; "" for the shared one.
	User string
	// Copy is the copy it runs (1 is the server's own keys) on a server
	// with copies; 0 otherwise.
	Copy  int
	Lines []string
}

// History returns the server's history on its shared sessions and every
// user's (what an admin sees). A user's session keeps its history while it
// lives (UserIdle, MaxUsers).
func (g *Gateway) History() History {
	return g.historyOf(func(string) bool { return true }, func(HistoryEntry) bool { return true })
}

// HistoryFor returns the part of History user may see: their own
// sessions', and on the shared sessions what is theirs (their calls, the
// server's requests during them) or nobody's (listings, pings, the
// handshake); another user's calls on a shared session stay hidden, and so
// do the server's requests no call could be told for, which may be
// anyone's (as a log message that is nobody's is). An empty user gets
// nothing.
func (g *Gateway) HistoryFor(user string) History {
	if user == "" {
		return History{Requests: []HistoryEntry{}, Notifications: []HistoryEntry{}}
	}
	return g.historyOf(func(u string) bool { return u == user }, func(e HistoryEntry) bool { return e.User == user || e.User == "" && !e.FromServer })
}

// historyOf merges the history of the shared view, the entries keep
// admits, and of the users' views child admits.
func (g *Gateway) historyOf(child func(user string) bool, keep func(HistoryEntry) bool) History {
	h := History{Requests: []HistoryEntry{}, Notifications: []HistoryEntry{}}
	h.add(g.shared, keep)
	g.mu.Lock()
	var children []*view
	for user, u := range g.users {
		if child(user) {
			children = append(children, u.v)
		}
	}
	g.mu.Unlock()
	all := func(HistoryEntry) bool { return true }
	for _, v := range children {
		h.add(v, all)
	}
	for _, list := range []*[]HistoryEntry{&h.Requests, &h.Notifications} {
		slices.SortStableFunc(*list, func(a, b HistoryEntry) int { return a.Time.Compare(b.Time) })
		if len(*list) > historyShown {
			*list = (*list)[len(*list)-historyShown:]
		}
	}
	slices.SortStableFunc(h.Stderr, func(a, b StderrTail) int { return cmp.Or(strings.Compare(a.User, b.User), a.Copy-b.Copy) })
	return h
}

// add appends what v's copies keep and keep admits, each entry marked with
// its copy on a server with copies.
func (h *History) add(v *view, keep func(HistoryEntry) bool) {
	for i, c := range v.conns {
		copyNo := 0
		if len(v.conns) > 1 {
			copyNo = i + 1
		}
		for _, src := range []struct {
			to   *[]HistoryEntry
			from []HistoryEntry
		}{{&h.Requests, c.History()}, {&h.Notifications, c.Notifications()}} {
			for _, e := range src.from {
				if keep(e) {
					e.Copy = copyNo
					*src.to = append(*src.to, e)
				}
			}
		}
		if s := c.Current(); s != nil {
			if lines := s.Stderr(); len(lines) > 0 {
				h.Stderr = append(h.Stderr, StderrTail{User: v.user, Copy: copyNo, Lines: lines})
			}
		}
	}
}
