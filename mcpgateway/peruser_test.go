package mcpgateway

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// callersAtOnce runs n calls of user's whoami at the same time and fails
// the test if one fails.
func callersAtOnce(t *testing.T, g *Gateway, user string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			if _, err := whoami(t, g, user); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent whoami: %v", err)
	}
}

// TestOAuthConcurrentCallsRefreshOnce sends many calls at once with a
// token that has expired, seen by the server (a 401 on every call) and by
// the client (its expiry passed): the token endpoint gets one refresh
// each time. Run with -race.
func TestOAuthConcurrentCallsRefreshOnce(t *testing.T) {
	t.Parallel()
	const callers = 20
	f := newAuthFixture(t)
	store := &mcpauth.MemoryTokenStore{}
	g := newGateway(t, f.config("docs"), &Options{Tokens: store})
	if err := g.SignIn(t.Context(), "alice", mcpauth.FetchBrowser{}); err != nil {
		t.Fatal(err)
	}
	if _, err := whoami(t, g, "alice"); err != nil { // the session is up
		t.Fatal(err)
	}

	t.Run("server says expired", func(t *testing.T) {
		before := f.refreshes()
		f.expire()
		callersAtOnce(t, g, "alice", callers)
		if got := f.refreshes() - before; got != 1 {
			t.Errorf("refreshes = %d, want 1", got)
		}
	})
	t.Run("client sees it expired", func(t *testing.T) {
		before := f.refreshes()
		a := g.users["alice"].v.conns[0].Auth()
		a.SetTokenExpiry(time.Now().Add(-time.Minute))
		callersAtOnce(t, g, "alice", callers)
		if got := f.refreshes() - before; got != 1 {
			t.Errorf("refreshes = %d, want 1", got)
		}
	})
	if n := len(f.authRequests()); n != 1 {
		t.Errorf("authorization requests = %d, want 1: refreshes, never a new sign-in", n)
	}
}

// TestOAuthRevokedRefreshTokenIsOneUsersProblem revokes alice's refresh
// token while her access token expires: alice is told to sign in again,
// clearly, and Bob's calls go on.
func TestOAuthRevokedRefreshTokenIsOneUsersProblem(t *testing.T) {
	t.Parallel()
	f := newAuthFixture(t)
	store := &mcpauth.MemoryTokenStore{}
	g := newGateway(t, f.config("docs"), &Options{Tokens: store})
	for _, u := range []string{"alice", "bob"} {
		if err := g.SignIn(t.Context(), u, mcpauth.FetchBrowser{}); err != nil {
			t.Fatal(err)
		}
		if _, err := whoami(t, g, u); err != nil {
			t.Fatal(err)
		}
	}
	alice, _ := store.Get(t.Context(), mcpauth.TokenKey{Server: "docs", User: "alice"})
	f.mu.Lock()
	f.revoked[alice.RefreshToken] = true
	is := f.issued[alice.AccessToken]
	is.expiry = time.Now().Add(-time.Second)
	f.issued[alice.AccessToken] = is
	f.mu.Unlock()

	_, err := whoami(t, g, "alice")
	var sr *mcpauth.SignInRequiredError
	if !errors.As(err, &sr) || sr.User != "alice" || !strings.Contains(err.Error(), "refused the refresh token") {
		t.Fatalf("alice: %v, want a sign-in error saying the refresh token was refused", err)
	}
	if st := g.StatusFor(t.Context(), "alice"); st.State != session.StateNeedsSignIn {
		t.Errorf("alice's state = %s, want needs_sign_in", st.State)
	}
	if _, err := store.Get(t.Context(), mcpauth.TokenKey{Server: "docs", User: "alice"}); !errors.Is(err, mcpauth.ErrNoToken) {
		t.Errorf("alice's refused token is still stored: %v", err)
	}
	for range 3 {
		if got, err := whoami(t, g, "bob"); err != nil || got != "subject-2" {
			t.Fatalf("bob: %q, %v", got, err)
		}
	}
	if st := g.StatusFor(t.Context(), "bob"); st.State != session.StateConnected {
		t.Errorf("bob's state = %s, want connected", st.State)
	}
	if ok, reason := g.Available(nil); !ok {
		t.Errorf("Available = false (%s): one user's sign-in is not the server's state", reason)
	}
	if cs := g.circuit(); cs.State != CircuitClosed {
		t.Errorf("circuit = %s: alice's sign-in must not count against the server", cs.State)
	}
}

// TestPerUserSessionsIdleAndLRU checks, on synctest's clock, that a
// user's session closes after UserIdle without a call and that past
// MaxUsers the least recently used one is closed.
func TestPerUserSessionsIdleAndLRU(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := mcpserver.NewMCPServer("s", "1.0.0")
		srv.AddTool(mcp.NewTool("whoami"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
		g := New(mcpconfig.ServerConfig{Name: "p", Transport: mcpconfig.TransportStdio, Command: "unused", Enabled: true, PerUser: true},
			&Options{UserIdle: time.Minute, MaxUsers: 2})
		g.childDialer = func(c *session.Conn) func(context.Context) (*session.Session, error) {
			return dialInProcess(c, func() mcptransport.Interface { return mcptransport.NewInProcessTransport(srv) })
		}
		defer func() { _ = g.Close() }()
		call := func(user string) *view {
			t.Helper()
			if _, err := g.Execute(WithUser(t.Context(), user), "whoami", nil); err != nil {
				t.Fatalf("%s: %v", user, err)
			}
			g.mu.Lock()
			defer g.mu.Unlock()
			return g.users[user].v
		}
		users := func() string {
			synctest.Wait() // evicted sessions are closed on g's goroutines
			g.mu.Lock()
			defer g.mu.Unlock()
			var out []string
			for _, u := range []string{"alice", "bob", "carol"} {
				if g.users[u] != nil {
					out = append(out, u)
				}
			}
			return strings.Join(out, ",")
		}
		closed := func(v *view) bool { return v.conns[0].Status().State == session.StateClosed }

		alice := call("alice")
		time.Sleep(time.Second)
		bob := call("bob")
		time.Sleep(time.Second)
		call("alice") // bob is now the least recently used
		time.Sleep(time.Second)
		carol := call("carol")
		if got := users(); got != "alice,carol" {
			t.Errorf("users after a third = %s, want alice,carol (bob least recently used)", got)
		}
		if !closed(bob) || closed(alice) || closed(carol) {
			t.Errorf("closed: alice %v, bob %v, carol %v; want only bob's session closed", closed(alice), closed(bob), closed(carol))
		}

		time.Sleep(40 * time.Second)
		call("carol")
		time.Sleep(40 * time.Second) // alice idle 81 s, carol 40 s
		if got := users(); got != "carol" {
			t.Errorf("users after alice idled = %s, want carol", got)
		}
		if !closed(alice) || closed(carol) {
			t.Errorf("closed: alice %v, carol %v; want alice's session closed", closed(alice), closed(carol))
		}
		time.Sleep(2 * time.Minute)
		if got := users(); got != "" || !closed(carol) {
			t.Errorf("users after everyone idled = %q, carol closed %v", got, closed(carol))
		}
		// A user who comes back gets a new session.
		if c := call("alice"); c == alice || closed(c) {
			t.Errorf("alice came back to her closed session")
		}
	})
}
