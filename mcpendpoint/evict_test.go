package mcpendpoint

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpendpoint/internal/sessionbook"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// waitingUpstream is an MCP server whose wait tool says on started that it
// runs, and on cancelled that its ctx ended, which it waits for.
func waitingUpstream(t *testing.T) (url string, started, cancelled <-chan struct{}) {
	t.Helper()
	up := mcpserver.NewMCPServer("up", "1")
	s, c := make(chan struct{}, 1), make(chan struct{}, 1)
	up.AddTool(mcp.NewTool("wait"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s <- struct{}{}
		<-ctx.Done()
		c <- struct{}{}
		return nil, ctx.Err()
	})
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(up, mcpserver.WithDisableLocalhostProtection(true)))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp", s, c
}

// TestEvictEndsTheSessionEverywhere: past MaxSessions, a new session ends
// the least recently used one, another user's, as its DELETE would: its
// call is cancelled upstream, its GET stream ends, its subscription ends
// at the server, a request naming it gets 404 (also when the replicas
// share sessions: its record is gone, so none adopts it again), and the
// other sessions go on.
func TestEvictEndsTheSessionEverywhere(t *testing.T) {
	for _, tt := range []struct {
		name   string
		shared bool
	}{
		{"one replica", false},
		{"shared sessions", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url, started, cancelled := waitingUpstream(t)
			up := mcpgateway.New(mcpconfig.ServerConfig{Name: "up", Transport: mcpconfig.TransportHTTP, URL: url, Enabled: true,
				ConnectTimeout: 5 * time.Second, CallTimeout: time.Minute}, nil) // no timeout ends the call first
			t.Cleanup(func() { _ = up.Close() })
			w := newWatchedServer(t)
			src := &source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{up, gateway(t, "w", w.url)}}
			opts := &Options{MaxSessions: 2}
			store := &memSessions{}
			if tt.shared {
				opts.Sessions = store
			}
			ep := New(src, opts)
			base := serve(t, ep)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()

			c, err := mcpclient.NewStreamableHttpClient(base + "/mcp")
			if err != nil {
				t.Fatal(err)
			}
			connect(t, c) // alice's
			sid := c.GetSessionId()
			if err := subscribeTo(ctx, c, "test://w"); err != nil {
				t.Fatal(err)
			}
			stream := mcpRequest(t, ctx, http.MethodGet, base, "alice", sid, "")
			if stream.StatusCode != http.StatusOK {
				t.Fatalf("GET stream: %d", stream.StatusCode)
			}
			ended := make(chan struct{})
			go func() {
				defer close(ended)
				_, _ = io.Copy(io.Discard, stream.Body)
				_ = stream.Body.Close()
			}()
			testenv.WaitFor(t, 10*time.Second, "alice's GET stream", func() bool { return ep.sessions.Streaming(sid, "alice") })
			go func() {
				req := mcp.CallToolRequest{}
				req.Params.Name = "up__wait"
				_, _ = c.CallTool(ctx, req) // ends with the session
			}()
			waitSignal(t, started, "the call to reach the server")

			bob := rawSession(t, base, "bob")
			carol := rawSession(t, base, "carol") // past MaxSessions: alice's is the least recently used

			waitSignal(t, cancelled, "the evicted session's call to be cancelled upstream")
			select {
			case <-ended:
			case <-ctx.Done():
				t.Fatal("the evicted session's GET stream is still open")
			}
			testenv.WaitFor(t, 10*time.Second, "the server to be unsubscribed", func() bool { return w.unsubs.Load() == 1 })
			list := `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`
			for _, s := range []struct{ user, sid string }{{"alice", sid}, {"bob", bob}, {"carol", carol}} {
				resp := mcpRequest(t, ctx, http.MethodPost, base, s.user, s.sid, list)
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				want := http.StatusOK
				if s.user == "alice" {
					want = http.StatusNotFound
				}
				if resp.StatusCode != want {
					t.Errorf("%s's session after the eviction: %d, want %d", s.user, resp.StatusCode, want)
				}
			}
			if _, err := store.Session(ctx, sid, "alice", time.Hour); tt.shared && !errors.Is(err, ErrUnknownSession) {
				t.Errorf("the evicted session's shared record: %v, want ErrUnknownSession", err)
			}
		})
	}
}

// TestEvictSparesOtherUsers: a user who opens sessions past the per-user
// cap loses their own least recently used, never another user's, even
// when that makes MaxSessions in all.
func TestEvictSparesOtherUsers(t *testing.T) {
	const total = 65
	if perUser := sessionbook.PerUser(total); perUser != total-1 {
		t.Fatalf("sessionbook.PerUser(%d) = %d, want %d", total, perUser, total-1)
	}
	ep := New(&source{expose: mcpconfig.DefaultExpose()}, &Options{MaxSessions: total})
	base := serve(t, ep)
	bob := rawSession(t, base, "bob")
	alice := make([]string, 0, total)
	for range total { // one past alice's cap, and MaxSessions in all
		alice = append(alice, rawSession(t, base, "alice"))
	}
	list := `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`
	for _, tt := range []struct {
		who, user, sid string
		want           int
	}{
		{"bob's session", "bob", bob, http.StatusOK},
		{"alice's first session", "alice", alice[0], http.StatusNotFound},
		{"alice's second session", "alice", alice[1], http.StatusOK},
		{"alice's last session", "alice", alice[total-1], http.StatusOK},
	} {
		resp := mcpRequest(t, t.Context(), http.MethodPost, base, tt.user, tt.sid, list)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s: %d, want %d", tt.who, resp.StatusCode, tt.want)
		}
	}
}
