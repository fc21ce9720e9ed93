package adapter

import (
	"context"

	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/web"
)

var _ web.ServerHistory = Servers{}

// History implements web.ServerHistory: what the key may see of a server's
// wire, as Logs decides it: an admin key (and every request without keys)
// all of it, a user's key only what is nobody's or theirs.
func (a Servers) History(ctx context.Context, name string) (web.History, error) {
	g, err := a.gateway(name)
	if err != nil {
		return web.History{}, err
	}
	var h mcpgateway.History
	if p := web.Principal(ctx); p != web.AdminUser {
		h = g.HistoryFor(p)
	} else {
		h = g.History()
	}
	entry := func(e mcpgateway.HistoryEntry) web.HistoryEntry {
		return web.HistoryEntry{Time: e.Time, Method: e.Method, ID: e.ID, FromServer: e.FromServer, DurationMS: float64(e.Duration.Microseconds()) / 1000,
			Bytes: e.Bytes, Message: e.Message, AnswerBytes: e.AnswerBytes, Answer: e.Answer, Error: e.Error, User: e.User, Copy: e.Copy}
	}
	return web.History{Requests: convert(h.Requests, entry), Notifications: convert(h.Notifications, entry),
		Stderr: convert(h.Stderr, func(s mcpgateway.StderrTail) web.StderrTail {
			return web.StderrTail{User: s.User, Copy: s.Copy, Lines: s.Lines}
		})}, nil
}
