package mcpendpoint

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpendpoint/internal/sessionbook"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// memSessions is a SessionStore in memory, as one database the replicas
// share.
type memSessions struct {
	mu   sync.Mutex
	rows map[string]memSession
}

type memSession struct {
	user string
	s    SharedSession
	seen time.Time
}

func (m *memSessions) PutSession(_ context.Context, id, user string, s SharedSession, _ time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rows == nil {
		m.rows = map[string]memSession{}
	}
	m.rows[id] = memSession{user: user, s: s, seen: time.Now()}
	return nil
}

func (m *memSessions) Session(_ context.Context, id, user string, idle time.Duration) (SharedSession, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[id]
	if !ok || r.user != user || time.Since(r.seen) > idle {
		return SharedSession{}, ErrUnknownSession
	}
	return r.s, nil
}

func (m *memSessions) TouchSession(_ context.Context, id, user, level string, idle time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[id]
	if !ok || r.user != user || time.Since(r.seen) > idle {
		return ErrUnknownSession
	}
	r.seen = time.Now()
	if level != "" {
		r.s.LogLevel = level
	}
	m.rows[id] = r
	return nil
}

func (m *memSessions) DeleteSession(_ context.Context, id, user string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.rows[id]; !ok || r.user != user {
		return ErrUnknownSession
	}
	delete(m.rows, id)
	return nil
}

// memRelay carries the messages published to it to an Endpoint's Receive
// on a goroutine of its own, which ends with the test.
type memRelay struct{ c chan []byte }

func newMemRelay(t *testing.T, to func() *Endpoint) *memRelay {
	t.Helper()
	r := &memRelay{c: make(chan []byte, 16)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for msg := range r.c {
			to().Receive(msg)
		}
	}()
	t.Cleanup(func() { close(r.c); <-done })
	return r
}

func (r *memRelay) Publish(msg []byte) error {
	r.c <- append([]byte(nil), msg...)
	return nil
}

// chattyUpstream is an MCP server whose chatty tool logs a message at
// info, then answers once release is closed.
func chattyUpstream(t *testing.T, release <-chan struct{}) string {
	t.Helper()
	s := mcpserver.NewMCPServer("chatty", "1", mcpserver.WithLogging())
	s.AddTool(mcp.NewTool("chatty"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_ = mcpserver.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/message",
			map[string]any{"level": "info", "logger": "talk", "data": "said at info"})
		select {
		case <-release:
		case <-ctx.Done():
		}
		return mcp.NewToolResultText("done"), nil
	})
	return serveUpstream(t, s)
}

// mcpRequest sends one request of session sid to url's /mcp as user.
func mcpRequest(t *testing.T, ctx context.Context, method, url, user, sid, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-User", user)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", mcp.ProtocolVersion20251125)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestSharedSessionMovesBetweenReplicas: a session initialized on
// endpoint A, which set its log level there, is served by endpoint B that
// shares A's SessionStore, at that level; B refuses it to another user;
// and a DELETE on B ends it on A, with A's GET stream of it.
func TestSharedSessionMovesBetweenReplicas(t *testing.T) {
	release := make(chan struct{})
	src := &source{expose: mcpconfig.DefaultExpose()}
	src.gws = append(src.gws, gateway(t, "chatty", chattyUpstream(t, release)))
	store := &memSessions{}
	var epA, epB *Endpoint
	epA = New(src, &Options{Sessions: store, Relay: newMemRelay(t, func() *Endpoint { return epB })})
	epB = New(src, &Options{Sessions: store, Relay: newMemRelay(t, func() *Endpoint { return epA })})
	urlA, urlB := serve(t, epA), serve(t, epB)

	c, err := mcpclient.NewStreamableHttpClient(urlA + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	connect(t, c)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	level := mcp.SetLevelRequest{}
	level.Params.Level = mcp.LoggingLevelInfo
	//lint:ignore SA1019 logging/setLevel is how a 2025-11-25 client asks
	if err := c.SetLevel(ctx, level); err != nil { //nolint:staticcheck // the 2025-11-25 way to ask
		t.Fatal(err)
	}
	sid := c.GetSessionId()

	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	if resp := mcpRequest(t, ctx, http.MethodPost, urlB, "bob", sid, list); resp.StatusCode != http.StatusNotFound {
		t.Errorf("alice's session as bob on B: %d, want 404", resp.StatusCode)
	}
	resp := mcpRequest(t, ctx, http.MethodPost, urlB, "alice", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"chatty__chatty"}}`)
	var got bytes.Buffer
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), "said at info") {
		got.WriteString(sc.Text() + "\n")
	}
	close(release)
	_, _ = io.Copy(&got, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(got.String(), `"done"`) {
		t.Fatalf("alice's call on B: %d, %s; want the info log message (the level set on A) and the result", resp.StatusCode, got.String())
	}

	stream := mcpRequest(t, ctx, http.MethodGet, urlA, "alice", sid, "")
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("GET stream on A: %d", stream.StatusCode)
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_, _ = io.Copy(io.Discard, stream.Body)
		_ = stream.Body.Close()
	}()
	if resp := mcpRequest(t, ctx, http.MethodDelete, urlB, "alice", sid, ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE on B: %d", resp.StatusCode)
	}
	select {
	case <-ended:
	case <-ctx.Done():
		t.Fatal("A's GET stream of the session deleted on B is still open")
	}
	if resp := mcpRequest(t, ctx, http.MethodPost, urlA, "alice", sid, list); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the session deleted on B, on A: %d, want 404", resp.StatusCode)
	}
}

// TestSharedSubscriptionUpdatesReachTheStream: a client whose GET stream
// is open on endpoint A subscribes to a resource through endpoint B (a
// load balancer sent the POST there); the server's update, which B gets,
// reaches the client on A's stream; and the client's resources/unsubscribe
// through A ends B's subscription.
func TestSharedSubscriptionUpdatesReachTheStream(t *testing.T) {
	w := newWatchedServer(t)
	src := &source{expose: mcpconfig.DefaultExpose()}
	src.gws = append(src.gws, gateway(t, "up", w.url))
	store := &memSessions{}
	var epA, epB *Endpoint
	epA = New(src, &Options{Sessions: store, Relay: newMemRelay(t, func() *Endpoint { return epB })})
	epB = New(src, &Options{Sessions: store, Relay: newMemRelay(t, func() *Endpoint { return epA })})
	urlA, urlB := serve(t, epA), serve(t, epB)

	c, got := updatesClient(t, urlA)
	sid := c.GetSessionId()
	testenv.WaitFor(t, 10*time.Second, "the client's GET stream on A", func() bool { return epA.sessions.Streaming(sid, "alice") })
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	resp := mcpRequest(t, ctx, http.MethodPost, urlB, "alice", sid, `{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":"test://w"}}`)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || w.subs.Load() != 1 {
		t.Fatalf("resources/subscribe on B: %d, %d subscriptions at the server", resp.StatusCode, w.subs.Load())
	}
	w.update(t, "test://w")
	wantUpdate(t, "the client streaming on A", got, "test://w")

	if err := unsubscribeFrom(ctx, c, "test://w"); err != nil { // on A, which does not hold the subscription
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "B to unsubscribe at the server", func() bool { return w.unsubs.Load() == 1 })
}

// TestSharedLevelSetAfterAdoption: a replica that took a session over
// before its client set the log level on another replica still relays a
// server's log message at the new level during the next call.
func TestSharedLevelSetAfterAdoption(t *testing.T) {
	release := make(chan struct{})
	src := &source{expose: mcpconfig.DefaultExpose()}
	src.gws = append(src.gws, gateway(t, "chatty", chattyUpstream(t, release)))
	store := &memSessions{}
	var epA, epB *Endpoint
	epA = New(src, &Options{Sessions: store, Relay: newMemRelay(t, func() *Endpoint { return epB })})
	epB = New(src, &Options{Sessions: store, Relay: newMemRelay(t, func() *Endpoint { return epA })})
	urlA, urlB := serve(t, epA), serve(t, epB)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()

	s := wireInit(t, urlA+"/mcp", "alice", mcp.ProtocolVersion20251125)
	// B takes the session over at the default level (error).
	if resp := mcpRequest(t, ctx, http.MethodPost, urlB, "alice", s.id, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("tools/list on B: %d", resp.StatusCode)
	}
	if resp := mcpRequest(t, ctx, http.MethodPost, urlA, "alice", s.id, `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("logging/setLevel on A: %d", resp.StatusCode)
	}
	resp := mcpRequest(t, ctx, http.MethodPost, urlB, "alice", s.id, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"chatty__chatty"}}`)
	var got bytes.Buffer
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), "said at info") && !strings.Contains(sc.Text(), `"result"`) {
		got.WriteString(sc.Text() + "\n")
	}
	seen := strings.Contains(sc.Text(), "said at info")
	close(release)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if !seen {
		t.Errorf("the call on B relayed no info message after the level was set on A:\n%s", got.String())
	}
}

// errStoreDown is what downSessions answers while the database is down.
var errStoreDown = errors.New("database unavailable: connection refused")

// downSessions is a SessionStore over memSessions whose reads fail as
// those of a database out of reach do while down is set: at once, or,
// with hang, when their ctx ends or after callTimeout, the store's own
// bound on a call (a database that does not answer).
type downSessions struct {
	*memSessions
	down, hang  atomic.Bool
	callTimeout time.Duration
}

func (d *downSessions) Session(ctx context.Context, id, user string, idle time.Duration) (SharedSession, error) {
	switch {
	case d.hang.Load():
		ctx, cancel := context.WithTimeout(ctx, d.callTimeout)
		defer cancel()
		<-ctx.Done()
		return SharedSession{}, fmt.Errorf("read an MCP session: %w", ctx.Err())
	case d.down.Load():
		return SharedSession{}, fmt.Errorf("read an MCP session: %w", errStoreDown)
	}
	return d.memSessions.Session(ctx, id, user, idle)
}

// wantStatus checks resp's status, and for 503 its Retry-After, and
// closes it.
func wantStatus(t *testing.T, what string, resp *http.Response, want int) {
	t.Helper()
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != want {
		t.Errorf("%s: %d %s, want %d", what, resp.StatusCode, body, want)
		return
	}
	if want == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
		t.Errorf("%s: 503 without Retry-After", what)
	}
}

// TestSharedSessionStoreDown: while the SessionStore cannot be read, a
// request of a session another replica opened gets 503 with Retry-After,
// not 404 (which tells a client to drop its session and its calls); once
// the store is back, the same request is served. 404 stays for a session
// the store says does not exist.
func TestSharedSessionStoreDown(t *testing.T) {
	src := &source{expose: mcpconfig.DefaultExpose()}
	store := &downSessions{memSessions: &memSessions{}}
	epA, epB := New(src, &Options{Sessions: store}), New(src, &Options{Sessions: store})
	urlA, urlB := serve(t, epA), serve(t, epB)
	s := wireInit(t, urlA+"/mcp", "alice", mcp.ProtocolVersion20251125)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	unknown := sessionbook.HTTPPrefix + strings.Repeat("0", 32)

	store.down.Store(true)
	wantStatus(t, "POST on B with the store down", mcpRequest(t, t.Context(), http.MethodPost, urlB, "alice", s.id, list), http.StatusServiceUnavailable)
	wantStatus(t, "GET stream on B with the store down", mcpRequest(t, t.Context(), http.MethodGet, urlB, "alice", s.id, ""), http.StatusServiceUnavailable)
	wantStatus(t, "DELETE on B with the store down", mcpRequest(t, t.Context(), http.MethodDelete, urlB, "alice", s.id, ""), http.StatusServiceUnavailable)
	store.down.Store(false)
	wantStatus(t, "an unknown session on B", mcpRequest(t, t.Context(), http.MethodPost, urlB, "alice", unknown, list), http.StatusNotFound)
	wantStatus(t, "POST on B with the store back", mcpRequest(t, t.Context(), http.MethodPost, urlB, "alice", s.id, list), http.StatusOK)
}

// TestSharedSessionStoreBound: when the SessionStore does not answer,
// every request of a session another replica opened gets 503 within the
// endpoint's bound on its store work, however many wait for one
// adoption: one that waited for another's does not start a bound of its
// own.
func TestSharedSessionStoreBound(t *testing.T) {
	src := &source{expose: mcpconfig.DefaultExpose()}
	store := &downSessions{memSessions: &memSessions{}}
	epA, epB := New(src, &Options{Sessions: store}), New(src, &Options{Sessions: store})
	const bound = time.Second
	store.callTimeout, epB.hub.StoreWait = bound, bound
	urlA, urlB := serve(t, epA), serve(t, epB)
	s := wireInit(t, urlA+"/mcp", "alice", mcp.ProtocolVersion20251125)
	store.hang.Store(true)

	ctx, cancel := context.WithTimeout(t.Context(), 5*bound) // a request the endpoint does not bound fails here
	defer cancel()
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			start := time.Now()
			resp := mcpRequest(t, ctx, http.MethodPost, urlB, "alice", s.id, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, i+1))
			wantStatus(t, fmt.Sprintf("request %d on B with the store hanging", i), resp, http.StatusServiceUnavailable)
			if d := time.Since(start); d > bound*18/10 {
				t.Errorf("request %d on B answered after %v, want within about %v", i, d, bound)
			}
		})
	}
	wg.Wait()
}
