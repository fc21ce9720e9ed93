package mcpgateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// watchedURI is the subscribable resource of cmd/conformance-server, which
// answers each subscription with one notifications/resources/updated.
const watchedURI = "test://watched-resource"

// conformanceStdio is the fixture as a stdio server named conf.
func conformanceStdio(t *testing.T, perUser bool) mcpconfig.ServerConfig {
	t.Helper()
	return mcpconfig.ServerConfig{Name: "conf", Transport: mcpconfig.TransportStdio, Command: testenv.ConformanceServer(t), Enabled: true,
		PerUser: perUser, ConnectTimeout: 15 * time.Second, CallTimeout: 5 * time.Second}
}

// updates is a subscriber that counts its updates on a channel.
func updates() (chan struct{}, func()) {
	ch := make(chan struct{}, 64)
	return ch, func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// awaitUpdate waits for an update on ch.
func awaitUpdate(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(15 * time.Second):
		t.Fatalf("no notifications/resources/updated %s", what)
	}
}

// userConn returns the state and pid of user's session of a per-user g.
func userConn(g *Gateway, user string) session.Status {
	g.mu.Lock()
	u := g.users[user]
	g.mu.Unlock()
	if u == nil {
		return session.Status{}
	}
	return u.v.conns[0].Status()
}

// TestSubscriptionSurvivesCrash: the stdio server a client subscribed on
// is killed. The gateway starts it again without waiting for a call, and
// subscribes again, so the client keeps getting updates.
func TestSubscriptionSurvivesCrash(t *testing.T) {
	t.Parallel()
	var sp spawns
	g := newGateway(t, conformanceStdio(t, false), &Options{OnProcessStart: sp.add})
	ch, updated := updates()
	stop, err := g.Subscribe(t.Context(), watchedURI, updated)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	t.Cleanup(func() { _ = stop(context.Background()) })
	awaitUpdate(t, ch, "after subscribing")

	pid := g.Status().PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	awaitUpdate(t, ch, "after the server was killed: the gateway did not reconnect and subscribe again")
	if n := len(sp.all()); n != 2 {
		t.Errorf("%d processes started, want 2", n)
	}
	if st := g.Status(); st.PID == pid || st.State != session.StateConnected {
		t.Errorf("after the reconnect: state %s, pid %d (killed %d), want connected on a new process", st.State, st.PID, pid)
	}
}

// TestSubscriptionReconnectIsPerUser: on a per-user server only the
// session of a user with subscribers is reconnected at once; another
// user's dead session waits for that user's next call, as lazy sessions
// do.
func TestSubscriptionReconnectIsPerUser(t *testing.T) {
	t.Parallel()
	var sp spawns
	g := newGateway(t, conformanceStdio(t, true), &Options{OnProcessStart: sp.add})
	alice := WithUser(t.Context(), "alice")
	ch, updated := updates()
	stop, err := g.Subscribe(alice, watchedURI, updated)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	t.Cleanup(func() { _ = stop(context.Background()) })
	awaitUpdate(t, ch, "after subscribing")
	if _, err := g.ListResources(WithUser(t.Context(), "bob")); err != nil {
		t.Fatalf("bob: ListResources: %v", err)
	}
	bobPID, alicePID := userConn(g, "bob").PID, userConn(g, "alice").PID
	if bobPID == 0 || alicePID == 0 {
		t.Fatalf("pids: bob %d, alice %d; want both running", bobPID, alicePID)
	}

	// Bob's child first: by the time alice's has been started again and
	// answered her subscription, an eager reconnect of bob's would have
	// started his long before.
	if err := syscall.Kill(bobPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "bob's dead session to be retired", func() bool { return userConn(g, "bob").PID == 0 })
	if err := syscall.Kill(alicePID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	awaitUpdate(t, ch, "for alice after her server was killed")
	if st := userConn(g, "bob"); st.State != session.StateIdle || st.PID != 0 {
		t.Errorf("bob, who subscribed to nothing: state %s, pid %d; want idle with no process", st.State, st.PID)
	}
	if n := len(sp.all()); n != 3 {
		t.Errorf("%d processes started, want 3 (alice, bob, alice again)", n)
	}
}

// TestSubscriptionReconnectKeepsBackoff: the eager reconnect goes through
// the usual connect, so a crash loop's back-off holds it back like any
// call; and Close does not wait for the back-off to end.
func TestSubscriptionReconnectKeepsBackoff(t *testing.T) {
	t.Parallel()
	var sp spawns
	g := New(conformanceStdio(t, false), &Options{OnProcessStart: sp.add, CrashLoopDeaths: 2, CrashLoopWindow: time.Hour, CrashBackoff: time.Hour})
	ch, updated := updates()
	if _, err := g.Subscribe(t.Context(), watchedURI, updated); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	awaitUpdate(t, ch, "after subscribing")
	pid := g.Status().PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	awaitUpdate(t, ch, "after the first kill")

	// The second death within the window: back-off, no new process.
	pid = g.Status().PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "the back-off", func() bool { return g.Status().RetryAt != nil })
	if st := g.Status(); st.State != session.StateFailed || st.PID != 0 {
		t.Errorf("after the second death: state %s, pid %d; want failed with no process", st.State, st.PID)
	}
	if n := len(sp.all()); n != 2 {
		t.Errorf("%d processes started, want 2: the back-off holds the reconnect", n)
	}

	closed := make(chan error, 1)
	go func() { closed <- g.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close waits for the reconnect's back-off")
	}
}

// TestSubscriptionSurvivesSessionEnd: a Streamable HTTP server ends the
// session a client subscribed on (DELETE, as an operator's restart of the
// session would). The gateway notices (health ping), opens a new session
// and subscribes on it again.
func TestSubscriptionSurvivesSessionEnd(t *testing.T) {
	t.Parallel()
	sids := make(chan string, 8) // the sessions subscribed on, in order
	srv := mcpserver.NewMCPServer("w", "1", mcpserver.WithResourceCapabilities(true, false))
	srv.AddResource(mcp.NewResource("test://w", "w"), func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: "x"}}, nil
	})
	hooks := &mcpserver.Hooks{}
	hooks.AddAfterSubscribe(func(ctx context.Context, _ any, _ *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		sids <- mcpserver.ClientSessionFromContext(ctx).SessionID()
	})
	mcpserver.WithHooks(hooks)(srv)
	// Stateful: the server keeps its sessions, so it answers one it ended
	// with 404, as the protocol says.
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(srv, mcpserver.WithDisableLocalhostProtection(true), mcpserver.WithStateful(true)))
	t.Cleanup(hs.Close)
	g := newGateway(t, mcpconfig.ServerConfig{Name: "w", Transport: mcpconfig.TransportHTTP, URL: hs.URL + "/mcp", Enabled: true,
		ConnectTimeout: 5 * time.Second, CallTimeout: 5 * time.Second}, &Options{HealthInterval: 50 * time.Millisecond})

	ch, updated := updates()
	stop, err := g.Subscribe(t.Context(), "test://w", updated)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	t.Cleanup(func() { _ = stop(context.Background()) })
	first := <-sids // sent before the subscribe was answered
	sendUntilUpdated(t, srv, first, ch, "on the first session")

	req, err := http.NewRequestWithContext(t.Context(), http.MethodDelete, hs.URL+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(mcpserver.HeaderKeySessionID, first)
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE of the session: %s", resp.Status)
	}

	var second string
	select {
	case second = <-sids:
	case <-time.After(15 * time.Second):
		t.Fatal("no resources/subscribe on a new session after the server ended the first")
	}
	if second == first {
		t.Fatalf("subscribed again on the ended session %s", first)
	}
	sendUntilUpdated(t, srv, second, ch, "on the new session")
}

// sendUntilUpdated sends notifications/resources/updated of test://w on
// session sid until the subscriber gets one: the session's stream may not
// be open yet when it is first sent.
func sendUntilUpdated(t *testing.T, srv *mcpserver.MCPServer, sid string, ch <-chan struct{}, what string) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		_ = srv.SendNotificationToSpecificClient(sid, string(mcp.MethodNotificationResourceUpdated), map[string]any{"uri": "test://w"})
		select {
		case <-ch:
			return
		case <-deadline:
			t.Fatalf("no update %s", what)
		case <-tick.C:
		}
	}
}

// TestSubscriptionKeepsUserSession: the idle users' sessions of a per-user
// server are closed, but not one that carries its user's subscriptions,
// which would end them.
func TestSubscriptionKeepsUserSession(t *testing.T) {
	t.Parallel()
	g := newGateway(t, conformanceStdio(t, true), &Options{UserIdle: time.Millisecond})
	ch, updated := updates()
	stop, err := g.Subscribe(WithUser(t.Context(), "alice"), watchedURI, updated)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	t.Cleanup(func() { _ = stop(context.Background()) })
	awaitUpdate(t, ch, "after subscribing")
	if _, err := g.ListResources(WithUser(t.Context(), "bob")); err != nil {
		t.Fatalf("bob: ListResources: %v", err)
	}
	// One pass of the reaper retires every idle user at once.
	testenv.WaitFor(t, 10*time.Second, "bob's idle session to be closed", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.users["bob"] == nil
	})
	if st := userConn(g, "alice"); st.State != session.StateConnected {
		t.Errorf("alice's session, which carries her subscription: state %q, want connected", st.State)
	}
}

// TestSubscriptionSurvivesEviction: a per-user server's pool is full and
// the session of a user with subscribers is closed for another user's; the
// user's next call opens a session subscribed again.
func TestSubscriptionSurvivesEviction(t *testing.T) {
	t.Parallel()
	g := newGateway(t, conformanceStdio(t, true), &Options{MaxUsers: 1})
	ch, updated := updates()
	alice := WithUser(t.Context(), "alice")
	stop, err := g.Subscribe(alice, watchedURI, updated)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	t.Cleanup(func() { _ = stop(context.Background()) })
	awaitUpdate(t, ch, "after subscribing")
	if _, err := g.ListResources(WithUser(t.Context(), "bob")); err != nil {
		t.Fatalf("bob: ListResources: %v", err)
	}
	if st := userConn(g, "alice"); st.PID != 0 {
		t.Fatalf("alice's session is still open (pid %d) with MaxUsers 1", st.PID)
	}
	if _, err := g.ListResources(alice); err != nil {
		t.Fatalf("alice: ListResources: %v", err)
	}
	awaitUpdate(t, ch, "after alice's session was closed for bob's and opened again")
}
