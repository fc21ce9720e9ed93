package samplerelay

import (
	"context"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// session is a ClientSession of an id.
type session struct{ id string }

func (s *session) Initialize()                                         {}
func (s *session) Initialized() bool                                   { return true }
func (s *session) NotificationChannel() chan<- mcp.JSONRPCNotification { return nil }
func (s *session) SessionID() string                                   { return s.id }

// TestSessions: a registered session is found by its id until it is
// unregistered; unregistering one that another with its id replaced
// keeps the new one.
func TestSessions(t *testing.T) {
	s := New()
	defer s.Close()
	ctx := t.Context()
	if s.Session("a") != nil {
		t.Fatal("a session before any was registered")
	}
	old, cur := &session{"a"}, &session{"a"}
	s.Registered(ctx, old)
	s.Registered(ctx, cur)
	s.Unregistered(ctx, old)
	if got := s.Session("a"); got != cur {
		t.Errorf("Session(a) = %v, want the session that replaced the unregistered one", got)
	}
	s.Unregistered(ctx, cur)
	if s.Session("a") != nil {
		t.Error("an unregistered session is still found")
	}
}

// TestWait: a result reaches the wait of its reply once, later ones and
// those of other replies are dropped, and none reaches a wait that is
// done; so does the news that a replica took the request.
func TestWait(t *testing.T) {
	s := New()
	defer s.Close()
	reply, c, taken, done := s.Wait()
	other, _, otherTaken, doneOther := s.Wait()
	defer doneOther()
	if reply == other || len(reply) != 24 {
		t.Fatalf("replies %q and %q: want two distinct 24-digit ids", reply, other)
	}
	s.Deliver(reply, Result{Body: []byte(`{"a":1}`)})
	s.Deliver(reply, Result{Error: "late"}) // answered already: dropped
	s.Deliver("nobody", Result{Error: "stray"})
	if got := <-c; string(got.Body) != `{"a":1}` || got.Error != "" {
		t.Errorf("result %+v, want the first one delivered", got)
	}
	if len(c) != 0 {
		t.Error("a second result reached the wait")
	}
	s.Taken(reply)
	s.Taken(reply) // once is enough; twice is harmless
	select {
	case <-taken:
	default:
		t.Error("Taken did not reach the wait of its reply")
	}
	select {
	case <-otherTaken:
		t.Error("Taken of one reply reached the wait of another")
	default:
	}
	done()
	s.Taken(reply) // a wait that is done: nothing to tell
	s.Deliver(reply, Result{Error: "after"})
	if len(c) != 0 {
		t.Error("a result reached a wait that is done")
	}
}

// TestClose: Close ends the goroutines of Go through their ctx and waits
// for them; Go starts none after it.
func TestClose(t *testing.T) {
	s := New()
	started := make(chan struct{})
	ended := make(chan struct{})
	if !s.Go(func(ctx context.Context) {
		close(started)
		<-ctx.Done()
		time.Sleep(10 * time.Millisecond) // Close waits for this too
		close(ended)
	}) {
		t.Fatal("Go refused before Close")
	}
	<-started
	s.Close()
	select {
	case <-ended:
	default:
		t.Error("Close returned before its goroutine ended")
	}
	if s.Go(func(context.Context) { t.Error("a goroutine ran after Close") }) {
		t.Error("Go started a goroutine after Close")
	}
	s.Close() // again: nothing happens
}
