package stream

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
)

// memNet links the Servers of a test as their shared database would:
// what one publishes, every other one receives, on a goroutine of the
// net's, which the test's end waits for.
type memNet struct {
	wg sync.WaitGroup
	// mu guards servers.
	mu      sync.Mutex
	servers []*Streams
}

// memRelay is one Streams' Relay on a memNet.
type memRelay struct {
	net  *memNet
	self int
}

func (r memRelay) Publish(msg []byte) error {
	r.net.mu.Lock()
	defer r.net.mu.Unlock()
	for i, s := range r.net.servers {
		if i != r.self {
			m := bytes.Clone(msg)
			r.net.wg.Go(func() { s.Receive(m) })
		}
	}
	return nil
}

// replicas returns n harnesses whose Servers share a memNet (each with its
// own store, which the relay does not need).
func replicas(t *testing.T, n int, opts Options) []*harness {
	t.Helper()
	net := &memNet{}
	t.Cleanup(net.wg.Wait)
	var hs []*harness
	for i := range n {
		o := opts
		o.Relay = memRelay{net: net, self: i}
		h := newHarnessWith(t, nil, o)
		net.mu.Lock()
		net.servers = append(net.servers, h.st)
		net.mu.Unlock()
		hs = append(hs, h)
	}
	return hs
}

// TestRelayStop: a stop sent to replica B, over HTTP or the WebSocket,
// stops the query running on replica A; a stop that no replica can do is
// refused after the relay wait, not before.
func TestRelayStop(t *testing.T) {
	const wait = 200 * time.Millisecond
	hs := replicas(t, 2, Options{RelayWait: wait})
	a, b := hs[0], hs[1]
	tsA, tsB := startServer(t, a), startServer(t, b)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()

	connA := dialWS(t, ctx, tsA, nil)
	wsSend(t, ctx, connA, `{"user_id": "alice", "conversation_id": "c1", "query_id": "q1", "query": "block"}`)
	waitFor(t, a.runner.started, "the run on A to start")
	connB := dialWS(t, ctx, tsB, nil)
	wsSend(t, ctx, connB, `{"type": "stop", "user_id": "alice", "conversation_id": "c1", "query_id": "q1"}`)
	if got := waitFor(t, a.runner.cancelled, "A's run to be stopped through B's socket"); got != "q1" {
		t.Errorf("cancelled %q", got)
	}

	wsSend(t, ctx, connA, `{"user_id": "alice", "conversation_id": "c2", "query_id": "q2", "query": "block"}`)
	waitFor(t, a.runner.started, "the second run on A to start")
	rec := b.do(t, http.MethodPost, "/query/alice/c2/stop", `{"query_id": "q2"}`)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"stopped":1`) {
		t.Errorf("POST stop on B: %d %s, want 200 with stopped 1", rec.Code, rec.Body)
	}
	if got := waitFor(t, a.runner.cancelled, "A's run to be stopped through B's route"); got != "q2" {
		t.Errorf("cancelled %q", got)
	}
	// The run's ctx ends before the run does: until it has unwound, A
	// still runs q2 and would stop it again.
	testenv.WaitFor(t, waitTimeout, "A to forget q2", func() bool { return !a.st.running.has(queryKey{"alice", "c2", "q2"}) })

	start := time.Now()
	rec = b.do(t, http.MethodPost, "/query/alice/c2/stop", `{"query_id": "q2"}`)
	if d := time.Since(start); rec.Code != http.StatusNotFound || d < wait {
		t.Errorf("stop of a query no replica runs: %d after %v, want 404 after the relay wait (%v)", rec.Code, d, wait)
	}
	wsSend(t, ctx, connB, `{"type": "stop", "user_id": "alice", "conversation_id": "c2", "query_id": "q2"}`)
	if got := wsRead(t, ctx, connB); !strings.Contains(got, "no such query is running") {
		t.Errorf("socket stop of a query no replica runs: %s", got)
	}
}

// TestRelayAnswerUnknown: an answer to a question that no replica holds is
// 404 after the relay wait, over HTTP and the WebSocket.
func TestRelayAnswerUnknown(t *testing.T) {
	const wait = 100 * time.Millisecond
	hs := replicas(t, 2, Options{RelayWait: wait})
	start := time.Now()
	rec := hs[1].do(t, http.MethodPost, "/elicitations/eli-nowhere", `{"user_id": "alice", "action": "decline"}`)
	if d := time.Since(start); rec.Code != http.StatusNotFound || d < wait {
		t.Errorf("answer to no question: %d after %v, want 404 after the relay wait", rec.Code, d)
	}
	// A refused action is refused at once, without asking the others.
	start = time.Now()
	rec = hs[1].do(t, http.MethodPost, "/elicitations/eli-nowhere", `{"user_id": "alice", "action": "maybe"}`)
	if d := time.Since(start); rec.Code != http.StatusUnprocessableEntity || d >= wait {
		t.Errorf("answer with a bad action: %d after %v, want 422 at once", rec.Code, d)
	}
}

// TestRelayLive: a change of a user's state on replica A wakes that user's
// event streams on replica B for the conversations and trees, not for the
// servers, which are each replica's own.
func TestRelayLive(t *testing.T) {
	hs := replicas(t, 2, Options{})
	a, b := hs[0], hs[1]
	sub := b.st.hub.subscribe("alice")
	defer b.st.hub.unsubscribe(sub)
	a.st.hub.publish("alice", allTopics)
	waitFor(t, sub.wake, "B's stream to wake")
	if got := b.st.hub.take(sub); got != topicTree|topicConversations {
		t.Errorf("B's stream was told of topics %b, want tree and conversations", got)
	}
	// Messages B cannot read are dropped, and a nil one (messages
	// missed) wakes every stream.
	b.st.Receive([]byte("{"))
	b.st.Receive([]byte(`{"kind": "nonsense"}`))
	b.st.Receive(nil)
	waitFor(t, sub.wake, "B's stream to wake after missed messages")
	if got := b.st.hub.take(sub); got != topicTree|topicConversations {
		t.Errorf("after missed messages B's stream looks again at %b, want tree and conversations", got)
	}
}

// has reports whether k is running here.
func (rq *runningQueries) has(k queryKey) bool {
	rq.mu.Lock()
	defer rq.mu.Unlock()
	_, ok := rq.byKey[k]
	return ok
}
