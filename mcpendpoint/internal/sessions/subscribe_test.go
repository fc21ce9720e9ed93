package sessions

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/elysia-go/elysia/mcpendpoint/internal/sessionbook"
)

// TestReceiveAfterCloseStartsNothing: a Relay message that arrives once
// the endpoint is closing (Config.Go refuses) starts no goroutine to
// outlive it.
func TestReceiveAfterCloseStartsNothing(t *testing.T) {
	book := sessionbook.New(10, 10, ErrUnknownSession, func(ev sessionbook.Eviction) { ev.Done() })
	h := New(Config{Book: book, Go: func(func()) bool { return false }})
	const sid, uri = "mcp-session-closed", "test://w"
	book.Add(sid, "alice")
	release := make(chan struct{})
	defer close(release)
	h.subs.bySession = map[string]map[string]*subscription{sid: {uri: {user: "alice", stop: func(context.Context) error {
		<-release // a server slow to unsubscribe
		return nil
	}}}}
	before := goleak.IgnoreCurrent()
	h.Receive(&Message{Kind: relayUnsubscribe, Session: sessionbook.Hash(sid), URI: uri})
	goleak.VerifyNone(t, before)
}
