package mcpendpoint

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// watchedServer is an MCP server in this process over Streamable HTTP
// whose resources (test://w and the template test://t/{id}) can be
// subscribed to; update sends notifications/resources/updated of a URI to
// the sessions that subscribed to it. It counts the subscribes and
// unsubscribes it got.
type watchedServer struct {
	url          string
	srv          *mcpserver.MCPServer
	subs, unsubs atomic.Int32
	mu           sync.Mutex
	by           map[string][]string // session ids by URI
	// held, when not nil, gets each resources/subscribe as it arrives,
	// which then waits until release is closed.
	held    chan<- string
	release <-chan struct{}
}

// hold makes the server's resources/subscribe wait until the returned func
// is called; arrived gets the URI of each one that waits.
func (w *watchedServer) hold() (arrived <-chan string, release func()) {
	a, r := make(chan string, MaxSubscriptionsPerSession), make(chan struct{})
	w.mu.Lock()
	w.held, w.release = a, r
	w.mu.Unlock()
	return a, sync.OnceFunc(func() { close(r) })
}

func newWatchedServer(t *testing.T) *watchedServer {
	t.Helper()
	w := &watchedServer{by: map[string][]string{}}
	hooks := &mcpserver.Hooks{}
	hooks.AddBeforeSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest) {
		w.mu.Lock()
		held, release := w.held, w.release
		w.mu.Unlock()
		if held == nil {
			return
		}
		held <- req.Params.URI
		select {
		case <-release:
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
		}
	})
	hooks.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		w.subs.Add(1)
		w.mu.Lock()
		w.by[req.Params.URI] = append(w.by[req.Params.URI], mcpserver.ClientSessionFromContext(ctx).SessionID())
		w.mu.Unlock()
	})
	hooks.AddAfterUnsubscribe(func(context.Context, any, *mcp.UnsubscribeRequest, *mcp.EmptyResult) { w.unsubs.Add(1) })
	w.srv = mcpserver.NewMCPServer("watched", "1", mcpserver.WithResourceCapabilities(true, true), mcpserver.WithHooks(hooks))
	read := func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: "now"}}, nil
	}
	w.srv.AddResource(mcp.NewResource("test://w", "w"), read)
	w.srv.AddResourceTemplate(mcp.NewResourceTemplate("test://t/{id}", "t"), read)
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(w.srv, mcpserver.WithDisableLocalhostProtection(true)))
	t.Cleanup(hs.Close)
	w.url = hs.URL + "/mcp"
	return w
}

func (w *watchedServer) update(t *testing.T, uri string) {
	t.Helper()
	w.mu.Lock()
	sids := append([]string(nil), w.by[uri]...)
	w.mu.Unlock()
	for _, sid := range sids {
		if err := w.srv.SendNotificationToSpecificClient(sid, string(mcp.MethodNotificationResourceUpdated), map[string]any{"uri": uri}); err != nil {
			t.Fatalf("send resources/updated: %v", err)
		}
	}
}

// updatesClient connects a client with a GET stream to url and returns it
// with the URIs of the notifications/resources/updated it gets.
func updatesClient(t *testing.T, url string) (*mcpclient.Client, <-chan string) {
	t.Helper()
	//lint:ignore SA1019 the GET stream of the protocol the endpoint serves (2025-11-25)
	c, err := mcpclient.NewStreamableHttpClient(url+"/mcp", mcptransport.WithContinuousListening()) //nolint:staticcheck // see above
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 16)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationResourceUpdated) {
			uri, _ := n.Params.AdditionalFields["uri"].(string)
			got <- uri
		}
	})
	connect(t, c)
	return c, got
}

func subscribeTo(ctx context.Context, c *mcpclient.Client, uri string) error {
	req := mcp.SubscribeRequest{}
	req.Params.URI = uri
	//lint:ignore SA1019 resources/subscribe of the protocol the endpoint serves (2025-11-25)
	return c.Subscribe(ctx, req) //nolint:staticcheck // see above
}

func unsubscribeFrom(ctx context.Context, c *mcpclient.Client, uri string) error {
	req := mcp.UnsubscribeRequest{}
	req.Params.URI = uri
	//lint:ignore SA1019 resources/unsubscribe of the protocol the endpoint serves (2025-11-25)
	return c.Unsubscribe(ctx, req) //nolint:staticcheck // see above
}

// wantUpdate waits for uri on got, or fails.
func wantUpdate(t *testing.T, who string, got <-chan string, uri string) {
	t.Helper()
	select {
	case u := <-got:
		if u != uri {
			t.Errorf("%s got resources/updated of %q, want %q", who, u, uri)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s got no resources/updated of %q within 5 s", who, uri)
	}
}

// TestSubscribeRelaysUpdates: a client's resources/subscribe subscribes at
// the server that lists the URI, once for every session of the endpoint
// that asks; the server's notifications/resources/updated reach each
// subscribed session; unsubscribing, or ending the session, ends them, and
// the server is unsubscribed when the last subscriber leaves.
func TestSubscribeRelaysUpdates(t *testing.T) {
	w := newWatchedServer(t)
	g := mcpgateway.New(mcpconfig.ServerConfig{Name: "up", Transport: mcpconfig.TransportHTTP, URL: w.url, Enabled: true,
		ConnectTimeout: 5 * time.Second, CallTimeout: 5 * time.Second}, nil)
	t.Cleanup(func() { _ = g.Close() })
	ep := New(&source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{g}}, nil)
	url := serve(t, ep)
	a, gotA := updatesClient(t, url)
	b, gotB := updatesClient(t, url)
	ctx := t.Context()

	for _, c := range []*mcpclient.Client{a, b} {
		if err := subscribeTo(ctx, c, "test://w"); err != nil {
			t.Fatalf("resources/subscribe: %v", err)
		}
	}
	if err := subscribeTo(ctx, a, "test://w"); err != nil { // again: nothing new
		t.Fatalf("resources/subscribe again: %v", err)
	}
	if n := w.subs.Load(); n != 1 {
		t.Errorf("the server got %d resources/subscribe, want 1 shared by the sessions", n)
	}
	w.update(t, "test://w")
	wantUpdate(t, "a", gotA, "test://w")
	wantUpdate(t, "b", gotB, "test://w")

	if err := unsubscribeFrom(ctx, a, "test://w"); err != nil {
		t.Fatalf("resources/unsubscribe: %v", err)
	}
	if n := w.unsubs.Load(); n != 0 {
		t.Errorf("the server got %d resources/unsubscribe while b is still subscribed, want 0", n)
	}
	w.update(t, "test://w")
	wantUpdate(t, "b", gotB, "test://w")
	select {
	case u := <-gotA:
		t.Errorf("a got resources/updated of %q after unsubscribing", u)
	default: // b's arrived first, and a's would have come with it
	}

	_ = b.Close() // DELETE: the session ends, and so does its subscription
	deadline := time.Now().Add(5 * time.Second)
	for w.unsubs.Load() != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := w.unsubs.Load(); n != 1 {
		t.Errorf("the server got %d resources/unsubscribe after the last session ended, want 1", n)
	}
}

// TestSubscribeRefusals: a URI no server lists is refused, and so is a
// subscription past MaxSubscriptionsPerSession.
func TestSubscribeRefusals(t *testing.T) {
	w := newWatchedServer(t)
	ep := New(&source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{gateway(t, "up", w.url)}}, nil)
	c, _ := updatesClient(t, serve(t, ep))
	ctx := t.Context()
	if err := subscribeTo(ctx, c, "test://nowhere"); err == nil || !strings.Contains(err.Error(), "no server of this service lists") {
		t.Errorf("subscribe to an unknown URI: %v, want it refused", err)
	}
	for i := range MaxSubscriptionsPerSession {
		if err := subscribeTo(ctx, c, fmt.Sprintf("test://t/%d", i)); err != nil {
			t.Fatalf("subscription %d: %v", i, err)
		}
	}
	err := subscribeTo(ctx, c, "test://w")
	if err == nil || !strings.Contains(err.Error(), ErrTooManySubscriptions.Error()) {
		t.Errorf("subscription past the cap: %v, want %v", err, ErrTooManySubscriptions)
	}
}

// subscribed counts the subscriptions ep's sessions hold or are making.
func subscribed(ep *Endpoint) int { return ep.hub.Subscriptions() }

// TestSubscribeCapHoldsUnderConcurrency: subscribes sent at once while the
// server is slow to answer cannot together pass
// MaxSubscriptionsPerSession: the slot is taken before the server is
// asked.
func TestSubscribeCapHoldsUnderConcurrency(t *testing.T) {
	w := newWatchedServer(t)
	ep := New(&source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{gateway(t, "up", w.url)}}, nil)
	c, _ := updatesClient(t, serve(t, ep))
	ctx := t.Context()
	for i := range MaxSubscriptionsPerSession - 1 {
		if err := subscribeTo(ctx, c, fmt.Sprintf("test://t/%d", i)); err != nil {
			t.Fatalf("subscription %d: %v", i, err)
		}
	}
	arrived, release := w.hold()
	defer release()
	const racers = 5
	errs := make(chan error, racers)
	for i := range racers {
		go func() { errs <- subscribeTo(ctx, c, fmt.Sprintf("test://t/racer%d", i)) }()
	}
	select {
	case <-arrived: // one reached the server
	case <-time.After(5 * time.Second):
		t.Fatal("no resources/subscribe reached the server within 5 s")
	}
	refused := 0
	for range racers - 1 { // the others are refused without asking it
		select {
		case err := <-errs:
			if err == nil || !strings.Contains(err.Error(), ErrTooManySubscriptions.Error()) {
				t.Errorf("a subscribe past the cap: %v, want %v", err, ErrTooManySubscriptions)
			}
			refused++
		case uri := <-arrived:
			t.Errorf("a second subscribe (%s) reached the server past the cap", uri)
		case <-time.After(5 * time.Second):
			t.Fatalf("%d of %d subscribes past the cap were refused within 5 s", refused, racers-1)
		}
	}
	release()
	if err := <-errs; err != nil {
		t.Errorf("the subscribe that took the last slot: %v", err)
	}
	if n := subscribed(ep); n != MaxSubscriptionsPerSession {
		t.Errorf("the session holds %d subscriptions, want the cap, %d", n, MaxSubscriptionsPerSession)
	}
}

// TestSubscribeEndedMidCallLeaksNothing: a session that ends while the
// server is being asked for its subscription keeps none: the endpoint
// unsubscribes at the server once it answers.
func TestSubscribeEndedMidCallLeaksNothing(t *testing.T) {
	w := newWatchedServer(t)
	ep := New(&source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{gateway(t, "up", w.url)}}, nil)
	c, _ := updatesClient(t, serve(t, ep))
	arrived, release := w.hold()
	defer release()
	done := make(chan error, 1)
	go func() { done <- subscribeTo(context.WithoutCancel(t.Context()), c, "test://w") }()
	select {
	case <-arrived:
	case <-time.After(5 * time.Second):
		t.Fatal("the resources/subscribe did not reach the server within 5 s")
	}
	_ = c.Close() // DELETE: the session ends while its subscribe waits
	release()
	<-done //nolint:errcheck // its answer no longer matters
	deadline := time.Now().Add(5 * time.Second)
	for (w.unsubs.Load() != 1 || subscribed(ep) != 0) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := subscribed(ep); n != 0 {
		t.Errorf("the endpoint keeps %d subscriptions of the ended session, want 0", n)
	}
	if n, m := w.subs.Load(), w.unsubs.Load(); n != m {
		t.Errorf("the server got %d resources/subscribe and %d resources/unsubscribe, want as many", n, m)
	}
}
