package mcpendpoint

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// notifier is an mcpgateway.Observer that tells src's listeners when a
// server's tools change, as discovery does.
type notifier struct{ src *source }

func (n notifier) ObserveCall(string, string, string, time.Duration) {}
func (n notifier) ObserveCircuit(string, string)                     {}
func (n notifier) ObserveTools(string) {
	n.src.mu.Lock()
	defer n.src.mu.Unlock()
	for c := range n.src.listeners {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// TestUpstreamToolChangeReachesClients: a server that adds a tool (and
// says so with list_changed) makes the endpoint send list_changed to an
// open session, whose next list has the tool.
func TestUpstreamToolChangeReachesClients(t *testing.T) {
	up := mcpserver.NewMCPServer("up", "1", mcpserver.WithToolCapabilities(true))
	up.AddTool(mcp.NewTool("first"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("1"), nil
	})
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(up, mcpserver.WithDisableLocalhostProtection(true)))
	t.Cleanup(hs.Close)
	c, changed := listening(t, hs.URL+"/mcp", func(src *source) mcpgateway.Observer { return notifier{src} },
		mcp.MethodNotificationToolsListChanged)
	if got := strings.Join(listedNames(t, c), ","); got != "up__first,ask" && got != "up__first" {
		t.Fatalf("tools/list = %s", got)
	}
	select { // the first listing is announced; this test wants the next one
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/tools/list_changed after the first listing")
	}
	up.AddTool(mcp.NewTool("second"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("2"), nil
	})
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/tools/list_changed after the upstream added a tool")
	}
	if got := strings.Join(listedNames(t, c), ","); !strings.Contains(got, "up__second") {
		t.Errorf("tools/list after the change = %s", got)
	}
}

// TestEndingASessionCancelsItsCalls: a client that ends its session
// (DELETE) while a call runs has the call cancelled upstream; another
// user's DELETE of that session changes nothing.
func TestEndingASessionCancelsItsCalls(t *testing.T) {
	up := mcpserver.NewMCPServer("up", "1")
	started, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	up.AddTool(mcp.NewTool("wait"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		cancelled <- struct{}{}
		return nil, ctx.Err()
	})
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(up, mcpserver.WithDisableLocalhostProtection(true)))
	t.Cleanup(hs.Close)
	g := mcpgateway.New(mcpconfig.ServerConfig{Name: "up", Transport: mcpconfig.TransportHTTP, URL: hs.URL + "/mcp", Enabled: true,
		ConnectTimeout: 5 * time.Second, CallTimeout: time.Minute}, nil) // no timeout ends the call first
	t.Cleanup(func() { _ = g.Close() })
	src := &source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{g}}
	base := serve(t, New(src, nil))
	c, err := mcpclient.NewStreamableHttpClient(base + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	connect(t, c)
	sid := c.GetTransport().(*mcptransport.StreamableHTTP).GetSessionId()
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "up__wait"
		_, _ = c.CallTool(t.Context(), req) // ends with the session
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the call never reached the server")
	}
	del := func(user string) int {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodDelete, base+"/mcp", nil)
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", mcp.ProtocolVersion20251125)
		req.Header.Set("X-User", user)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if code := del("bob"); code != http.StatusNotFound {
		t.Errorf("bob's DELETE of alice's session: %d, want 404", code)
	}
	select {
	case <-cancelled:
		t.Fatal("bob's DELETE cancelled alice's call")
	default:
	}
	if code := del("alice"); code != http.StatusOK {
		t.Errorf("alice's DELETE: %d", code)
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the call was not cancelled upstream when its session ended")
	}
}

// bookInvariants fails t unless b's indexes agree and its caps hold.
func bookInvariants(t *testing.T, b *sessionBook) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for user, mine := range b.users {
		if mine.Len() == 0 || mine.Len() > b.perUser {
			t.Errorf("user %s holds %d sessions, cap %d", user, mine.Len(), b.perUser)
		}
		n += mine.Len()
	}
	if len(b.owners) != n || b.lru.Len() != n || len(b.hashes) != n || n > b.max {
		t.Errorf("%d owners, %d in users' lists, %d in lru, %d hashes, max %d", len(b.owners), n, b.lru.Len(), len(b.hashes), b.max)
	}
	for id, o := range b.owners {
		if b.hashes[idHash(id)] != id || o.all.Value != o || o.mine.Value != o {
			t.Errorf("session %s is indexed wrong", id)
		}
	}
}

// TestSessionBookEvicts: a user at the per-user cap loses their own least
// recently used session; past the book's max, the least recently used of
// any user goes; a use counts the session recent; a forgotten one frees
// its room.
func TestSessionBookEvicts(t *testing.T) {
	type step struct {
		op string // add, use or forget
		id string // its first letter is its user
	}
	for _, tt := range []struct {
		name         string
		max, perUser int
		steps        []step
		want         []string // evicted: id/cause
	}{
		{"user cap spares others", 10, 2,
			[]step{{"add", "a1"}, {"add", "b1"}, {"add", "a2"}, {"add", "a3"}, {"add", "a4"}},
			[]string{"a1/" + causeUser, "a2/" + causeUser}},
		{"use counts", 10, 2,
			[]step{{"add", "a1"}, {"add", "a2"}, {"use", "a1"}, {"add", "a3"}},
			[]string{"a2/" + causeUser}},
		{"max evicts the least recently used of all", 3, 3,
			[]step{{"add", "a1"}, {"add", "b1"}, {"add", "c1"}, {"use", "a1"}, {"add", "d1"}},
			[]string{"b1/" + causeService}},
		{"user cap before max", 3, 2,
			[]step{{"add", "b1"}, {"add", "a1"}, {"add", "a2"}, {"add", "a3"}},
			[]string{"a1/" + causeUser}},
		{"forgotten frees room", 10, 2,
			[]step{{"add", "a1"}, {"add", "a2"}, {"forget", "a1"}, {"add", "a3"}, {"add", "a3"}},
			nil},
		{"cap of one", 10, 1,
			[]step{{"add", "a1"}, {"add", "a2"}, {"add", "b1"}},
			[]string{"a1/" + causeUser}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			b := newSessionBook(tt.max, tt.perUser, func(ev eviction) {
				got = append(got, ev.id+"/"+ev.cause)
				ev.done()
			})
			for _, s := range tt.steps {
				switch user := s.id[:1]; s.op {
				case "add":
					b.add(s.id, user)
				case "use":
					if !b.ownedBy(s.id, user) {
						t.Fatalf("%s is not open", s.id)
					}
				case "forget":
					b.forget(s.id)
				}
				bookInvariants(t, b)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("evicted %v, want %v", got, tt.want)
			}
			for _, ev := range got {
				id := strings.Split(ev, "/")[0]
				if _, ok := b.owner(id); ok || b.byHash(idHash(id)) != "" {
					t.Errorf("evicted %s is still open", id)
				}
			}
		})
	}
}

// TestSessionBookEvictedNotAdopted: until an evicted session has ended, a
// request naming it waits (shared.go), rather than adopting it again from
// the SessionStore.
func TestSessionBookEvictedNotAdopted(t *testing.T) {
	var ended func()
	b := newSessionBook(1, 1, func(ev eviction) { ended = ev.done })
	b.add("s1", "alice")
	b.add("s2", "bob")
	wait := b.adoption("s1")
	if wait == nil {
		t.Fatal("no adoption in progress for the evicted session")
	}
	if _, first, _ := b.startAdopt("s1"); first {
		t.Fatal("the evicted session could be adopted before it ended")
	}
	ended()
	select {
	case <-wait:
	default:
		t.Fatal("its end did not release the requests waiting")
	}
	done, first, _ := b.startAdopt("s1")
	if !first {
		t.Fatal("the ended session is still marked")
	}
	done()
}

// TestSessionBookConcurrent: concurrent adds, uses and forgets of several
// users keep the book's indexes in step and its caps.
func TestSessionBookConcurrent(t *testing.T) {
	evicted := make(chan eviction, 1<<12)
	b := newSessionBook(20, 8, func(ev eviction) { evicted <- ev })
	var wg sync.WaitGroup
	for u := range 6 {
		wg.Go(func() {
			user := fmt.Sprintf("user%d", u)
			var mine []string
			for i := range 200 {
				mine = append(mine, b.newID(user, httpPrefix))
				switch i % 3 {
				case 1:
					b.ownedBy(mine[i/2], user)
				case 2:
					b.forget(mine[i/3])
				}
			}
		})
	}
	wg.Wait()
	close(evicted)
	for ev := range evicted {
		ev.done()
	}
	bookInvariants(t, b)
	if len(b.adopting) != 0 {
		t.Errorf("%d evicted sessions still marked after they ended", len(b.adopting))
	}
}

// BenchmarkSessionBookAdd: adding a session to a full book, which evicts
// one (under either cap), costs the same at a thousand sessions as at a
// hundred thousand.
func BenchmarkSessionBookAdd(b *testing.B) {
	const users = 1000
	for _, n := range []int{1_000, 100_000} {
		for _, cause := range []string{causeService, causeUser} {
			b.Run(fmt.Sprintf("sessions=%d/cause=%s", n, cause), func(b *testing.B) {
				perUser := n // the book's max evicts
				if cause == causeUser {
					perUser = n / users
				}
				names := make([]string, users)
				for u := range names {
					names[u] = "user" + strconv.Itoa(u)
				}
				book := newSessionBook(n, perUser, func(ev eviction) { ev.done() })
				for i := range n {
					book.add(httpPrefix+strconv.Itoa(i), names[i%users])
				}
				b.ResetTimer()
				for i := range b.N {
					book.add(httpPrefix+strconv.Itoa(n+i), names[i%users])
				}
			})
		}
	}
}
