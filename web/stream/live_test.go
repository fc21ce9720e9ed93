package stream

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/elysia-go/elysia/persist"
	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web"
	"github.com/elysia-go/elysia/web/internal/webtest"
)

// liveServers is a Servers whose one server's state a test changes.
type liveServersFake struct {
	fakeServers
	mu    sync.Mutex // guards state
	state string
}

func (f *liveServersFake) set(state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state = state
}

func (f *liveServersFake) Servers(ctx context.Context) (web.ServersStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return web.ServersStatus{ConfigFile: "mcp.json", Servers: []web.ServerStatus{{Name: "todo", ToolName: "mcp_todo", State: f.state}}}, nil
}

// notesGateway is a second gateway, which a test places in the trees as a
// reload of mcp.json would.
type notesGateway struct{ webtest.TodoGateway }

func (notesGateway) Name() string { return "mcp_notes" }

// fakeChanges is a Changes whose signal a test sends, and which it can
// end as a shutting-down service does.
type fakeChanges struct {
	mu   sync.Mutex // guards subs and done
	subs []chan struct{}
	done bool
}

func (f *fakeChanges) Subscribe(ctx context.Context) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := make(chan struct{}, 1)
	if f.done {
		close(c)
		return c
	}
	f.subs = append(f.subs, c)
	return c
}

func (f *fakeChanges) signal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.subs {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

func (f *fakeChanges) end() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.done {
		f.done = true
		for _, c := range f.subs {
			close(c)
		}
	}
}

type liveHarness struct {
	ts      *httptest.Server
	trees   *tree.Manager
	servers *liveServersFake
	changes *fakeChanges
}

// newLiveHarness serves the routes over a real tree.Manager and store
// (realTrees: alice has the conversation c1), fake Servers and Changes.
func newLiveHarness(t *testing.T, opts *web.Options) *liveHarness {
	t.Helper()
	lh := &liveHarness{servers: &liveServersFake{state: "idle"}, changes: &fakeChanges{}}
	var o web.Options
	if opts != nil {
		o = *opts
	}
	o.Assets = testAssets
	st := New(Options{Runner: newFakeRunner(), Changes: lh.changes})
	o.Routes = []web.RouteSet{st.Routes}
	var ps *persist.Store
	lh.trees, ps, _ = webtest.RealTrees(t)
	srv := web.New(web.Deps{Trees: lh.trees, Servers: lh.servers, Store: ps}, &o)
	lh.ts = httptest.NewServer(srv.Handler())
	t.Cleanup(lh.ts.Close)
	return lh
}

// liveMsg is one message of an event stream.
type liveMsg struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// liveReader reads an event stream on its own goroutine, so that a test can
// wait for a message with a deadline.
type liveReader struct {
	msgs chan liveMsg // closed at the end of the stream
	resp *http.Response
}

// openEvents opens path with key (none when ""), and checks the answer is
// an event stream.
func openEvents(t *testing.T, lh *liveHarness, path, key string) *liveReader {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, lh.ts.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := lh.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r := &liveReader{msgs: make(chan liveMsg, 16), resp: resp}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		_ = resp.Body.Close() // the stream is cut on purpose
		wg.Wait()
	})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		return r
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(r.msgs)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue // blank lines and ": ping"
			}
			var m liveMsg
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				m = liveMsg{Type: "undecodable: " + line}
			}
			select {
			case r.msgs <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	return r
}

// next returns the next message, failing the test when none comes within
// waitTimeout or the stream ends.
func (r *liveReader) next(t *testing.T) liveMsg {
	t.Helper()
	select {
	case m, ok := <-r.msgs:
		if !ok {
			t.Fatal("the event stream ended")
		}
		return m
	case <-time.After(waitTimeout):
		t.Fatal("no event within the wait timeout")
	}
	return liveMsg{}
}

// field decodes one member of m's payload as a string of JSON.
func (m liveMsg) field(t *testing.T, name string) string {
	t.Helper()
	var p map[string]json.RawMessage
	if err := json.Unmarshal(m.Payload, &p); err != nil {
		t.Fatalf("%s payload %s: %v", m.Type, m.Payload, err)
	}
	return string(p[name])
}

func TestEventsAuth(t *testing.T) {
	keys := map[string]string{"k-alice": "alice", "k-bob": "bob", "k-admin": web.AdminUser}
	lh := newLiveHarness(t, &web.Options{Keys: keys})
	tests := []struct {
		name, path, key string
		want            int
	}{
		{"no key", "/events/alice", "", http.StatusUnauthorized},
		{"unknown key", "/events/alice", "nope", http.StatusUnauthorized},
		{"another user's key", "/events/alice/c1", "k-bob", http.StatusForbidden},
		{"own key", "/events/alice/c1", "k-alice", http.StatusOK},
		{"admin key", "/events/alice", "k-admin", http.StatusOK},
		{"bad conversation id", "/events/alice/" + strings.Repeat("x", 300), "k-alice", http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := openEvents(t, lh, tt.path, tt.key)
			if got := r.resp.StatusCode; got != tt.want {
				t.Errorf("GET %s: status %d, want %d", tt.path, got, tt.want)
			}
		})
	}
}

func TestEventsFirstMessages(t *testing.T) {
	lh := newLiveHarness(t, nil)
	tests := []struct {
		path string
		want []string
	}{
		{"/events/alice", []string{liveServers, liveConversations}},
		{"/events/alice/c1", []string{liveServers, liveTree, liveConversations}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r := openEvents(t, lh, tt.path, "")
			var got []string
			for range tt.want {
				m := r.next(t)
				got = append(got, m.Type)
				if e := m.field(t, "error"); e != `""` {
					t.Errorf("%s: error %s", m.Type, e)
				}
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("first messages %q, want %q", got, tt.want)
			}
		})
	}
}

// TestEventsSendOnlyChanges checks that a signal that changed nothing sends
// nothing: after it, the next message is the one that changed.
func TestEventsSendOnlyChanges(t *testing.T) {
	lh := newLiveHarness(t, nil)
	r := openEvents(t, lh, "/events/alice/c1", "")
	for range 3 {
		r.next(t)
	}
	lh.changes.signal() // nothing changed
	lh.servers.set("connected")
	lh.changes.signal()
	m := r.next(t)
	if m.Type != liveServers || !strings.Contains(string(m.Payload), `"state":"connected"`) {
		t.Errorf("after a change: %s %s, want the servers with state connected", m.Type, m.Payload)
	}
}

// TestEventsTreeAfterReload checks that a gateway placed in the trees, as a
// reload of mcp.json does, reaches the stream of a conversation's page.
func TestEventsTreeAfterReload(t *testing.T) {
	lh := newLiveHarness(t, nil)
	r := openEvents(t, lh, "/events/alice/c1", "")
	for range 3 {
		r.next(t)
	}
	lh.trees.SetTools([]tree.Placement{{Tool: webtest.TodoGateway{}}, {Tool: notesGateway{}}})
	lh.changes.signal()
	m := r.next(t)
	if m.Type != liveTree || !strings.Contains(m.field(t, "tree"), `"mcp_notes"`) {
		t.Errorf("after the reload: %s %s, want the tree with mcp_notes", m.Type, m.Payload)
	}
}

// TestEventsSeeTheirUsersRequests checks that a change made through the
// routes, which Changes does not report, reaches its user's streams, and
// only theirs.
func TestEventsSeeTheirUsersRequests(t *testing.T) {
	lh := newLiveHarness(t, nil)
	alice := openEvents(t, lh, "/events/alice", "")
	bob := openEvents(t, lh, "/events/bob", "")
	for range 2 {
		alice.next(t)
		bob.next(t)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodDelete, lh.ts.URL+"/conversations/alice/c1", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := lh.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close() // only the status matters
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE /conversations/alice/c1: %d", resp.StatusCode)
	}
	m := alice.next(t)
	if m.Type != liveConversations || strings.Contains(m.field(t, "conversations"), `"c1"`) {
		t.Errorf("alice's stream after the delete: %s %s, want the list without c1", m.Type, m.Payload)
	}
	// Bob's stream was not told: a change of the servers is the next
	// thing it sends.
	lh.servers.set("connected")
	lh.changes.signal()
	if m := bob.next(t); m.Type != liveServers {
		t.Errorf("bob's stream sent %s %s, want only the servers' change", m.Type, m.Payload)
	}
}

// TestLiveRunnerPublishes checks that the end of a query, whichever
// transport carried it, tells the user's streams.
func TestLiveRunnerPublishes(t *testing.T) {
	hub := newLiveHub()
	sub := hub.subscribe("alice")
	defer hub.unsubscribe(sub)
	r := liveRunner{Runner: newFakeRunner(), hub: hub}
	if err := r.RunQuery(t.Context(), "alice", "c1", "q1", "hi", func(tools.Envelope) {}); err != nil {
		t.Fatal(err)
	}
	if got := hub.take(sub); got != allTopics {
		t.Errorf("after a query: take() = %b, want every topic %b", got, allTopics)
	}
}

// TestEventsEndWithTheService checks that the stream ends when Changes
// closes its channel, so an open page does not hold up a shutdown, and that
// it leaves no goroutine behind.
func TestEventsEndWithTheService(t *testing.T) {
	lh := newLiveHarness(t, nil)
	leaks := goleak.IgnoreCurrent() // the database's own goroutines stay until the cleanup
	r := openEvents(t, lh, "/events/alice", "")
	r.next(t)
	lh.changes.end()
	deadline := time.After(waitTimeout)
	for {
		select {
		case _, ok := <-r.msgs:
			if !ok {
				lh.ts.Close()
				goleak.VerifyNone(t, leaks)
				return
			}
		case <-deadline:
			t.Fatal("the stream did not end after Changes closed its channel")
		}
	}
}

func TestEventsHeartbeat(t *testing.T) {
	lh := newLiveHarness(t, &web.Options{Heartbeat: 10 * time.Millisecond})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, lh.ts.URL+"/events/alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := lh.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }() // the stream is cut on purpose
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == ": ping" {
			return
		}
	}
	t.Fatalf("the stream ended without a heartbeat: %v", sc.Err())
}

func TestLiveHubPublish(t *testing.T) {
	h := newLiveHub()
	alice, bob := h.subscribe("alice"), h.subscribe("bob")
	defer h.unsubscribe(alice)
	defer h.unsubscribe(bob)
	h.publish("alice", topicConversations)
	h.publish("", topicServers)
	for _, tt := range []struct {
		sub  *liveSub
		want topic
	}{{alice, topicConversations | topicServers}, {bob, topicServers}} {
		select {
		case <-tt.sub.wake:
		default:
			t.Errorf("%s was not woken", tt.sub.user)
		}
		if got := h.take(tt.sub); got != tt.want {
			t.Errorf("%s: take() = %b, want %b", tt.sub.user, got, tt.want)
		}
		if got := h.take(tt.sub); got != 0 {
			t.Errorf("%s: second take() = %b, want 0", tt.sub.user, got)
		}
	}
}
