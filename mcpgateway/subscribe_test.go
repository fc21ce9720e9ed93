package mcpgateway

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// TestSubscribeIsPerUser: on a per-user server each user's subscription
// is made on that user's own session, and an update the server sends on
// one user's session reaches that user's subscriber only.
func TestSubscribeIsPerUser(t *testing.T) {
	var mu sync.Mutex
	sessionOf := map[string]string{} // the upstream session id, by the user that subscribed on it
	srv := mcpserver.NewMCPServer("w", "1", mcpserver.WithResourceCapabilities(true, false))
	hooks := &mcpserver.Hooks{}
	srv.AddResource(mcp.NewResource("test://w", "w"), func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: "x"}}, nil
	})
	hooks.AddAfterSubscribe(func(ctx context.Context, _ any, _ *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		mu.Lock()
		defer mu.Unlock()
		sessionOf[mcpserver.ClientSessionFromContext(ctx).SessionID()] = "" // named below, once the call returns
	})
	mcpserver.WithHooks(hooks)(srv)
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(srv, mcpserver.WithDisableLocalhostProtection(true)))
	t.Cleanup(hs.Close)
	g := newGateway(t, mcpconfig.ServerConfig{Name: "w", Transport: mcpconfig.TransportHTTP, URL: hs.URL + "/mcp", Enabled: true,
		PerUser: true, ConnectTimeout: 5 * time.Second, CallTimeout: 5 * time.Second}, nil)

	got := map[string]chan struct{}{"alice": make(chan struct{}, 4), "bob": make(chan struct{}, 4)}
	for _, user := range []string{"alice", "bob"} {
		stop, err := g.Subscribe(WithUser(t.Context(), user), "test://w", func() { got[user] <- struct{}{} })
		if err != nil {
			t.Fatalf("%s: Subscribe: %v", user, err)
		}
		t.Cleanup(func() { _ = stop(context.Background()) })
		mu.Lock()
		for sid, u := range sessionOf {
			if u == "" {
				sessionOf[sid] = user
			}
		}
		mu.Unlock()
	}
	mu.Lock()
	var aliceSID string
	for sid, u := range sessionOf {
		if u == "alice" {
			aliceSID = sid
		}
	}
	n := len(sessionOf)
	mu.Unlock()
	if n != 2 {
		t.Fatalf("the server got subscriptions on %d sessions, want one per user", n)
	}
	// Two updates: once alice has the second, the read loop is done with
	// the first, and whatever it would have passed to bob has come.
	for i := range 2 {
		if err := srv.SendNotificationToSpecificClient(aliceSID, string(mcp.MethodNotificationResourceUpdated), map[string]any{"uri": "test://w"}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-got["alice"]:
		case <-time.After(5 * time.Second):
			t.Fatalf("alice's subscriber got no update %d from alice's session", i+1)
		}
	}
	select {
	case <-got["bob"]:
		t.Error("bob's subscriber got an update of alice's session")
	default:
	}
}
