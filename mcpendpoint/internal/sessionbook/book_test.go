package sessionbook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway"
)

// errUnknown is the error the books of the tests wrap for an unknown
// session.
var errUnknown = errors.New("unknown MCP session")

// bookInvariants fails t unless b's indexes agree and its caps hold.
func bookInvariants(t *testing.T, b *Book) {
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
		if b.hashes[Hash(id)] != id || o.all.Value != o || o.mine.Value != o {
			t.Errorf("session %s is indexed wrong", id)
		}
	}
}

// TestBookEvicts: a user at the per-user cap loses their own least
// recently used session; past the book's max, the least recently used of
// any user goes; a use counts the session recent; a forgotten one frees
// its room.
func TestBookEvicts(t *testing.T) {
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
			[]string{"a1/" + CauseUser, "a2/" + CauseUser}},
		{"use counts", 10, 2,
			[]step{{"add", "a1"}, {"add", "a2"}, {"use", "a1"}, {"add", "a3"}},
			[]string{"a2/" + CauseUser}},
		{"max evicts the least recently used of all", 3, 3,
			[]step{{"add", "a1"}, {"add", "b1"}, {"add", "c1"}, {"use", "a1"}, {"add", "d1"}},
			[]string{"b1/" + CauseService}},
		{"user cap before max", 3, 2,
			[]step{{"add", "b1"}, {"add", "a1"}, {"add", "a2"}, {"add", "a3"}},
			[]string{"a1/" + CauseUser}},
		{"forgotten frees room", 10, 2,
			[]step{{"add", "a1"}, {"add", "a2"}, {"forget", "a1"}, {"add", "a3"}, {"add", "a3"}},
			nil},
		{"cap of one", 10, 1,
			[]step{{"add", "a1"}, {"add", "a2"}, {"add", "b1"}},
			[]string{"a1/" + CauseUser}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			b := New(tt.max, tt.perUser, errUnknown, func(ev Eviction) {
				got = append(got, ev.ID+"/"+ev.Cause)
				ev.Done()
			})
			for _, s := range tt.steps {
				switch user := s.id[:1]; s.op {
				case "add":
					b.Add(s.id, user)
				case "use":
					if !b.OwnedBy(s.id, user) {
						t.Fatalf("%s is not open", s.id)
					}
				case "forget":
					b.Forget(s.id)
				}
				bookInvariants(t, b)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("evicted %v, want %v", got, tt.want)
			}
			for _, ev := range got {
				id := strings.Split(ev, "/")[0]
				if _, ok := b.Owner(id); ok || b.ByHash(Hash(id)) != "" {
					t.Errorf("evicted %s is still open", id)
				}
			}
		})
	}
}

// TestBookEvictedNotAdopted: until an evicted session has ended, a
// request naming it waits (Adoption), rather than adopting it again from
// the SessionStore.
func TestBookEvictedNotAdopted(t *testing.T) {
	var ended func()
	b := New(1, 1, errUnknown, func(ev Eviction) { ended = ev.Done })
	b.Add("s1", "alice")
	b.Add("s2", "bob")
	wait := b.Adoption("s1")
	if wait == nil {
		t.Fatal("no adoption in progress for the evicted session")
	}
	if _, first, _ := b.StartAdopt("s1"); first {
		t.Fatal("the evicted session could be adopted before it ended")
	}
	ended()
	select {
	case <-wait:
	default:
		t.Fatal("its end did not release the requests waiting")
	}
	done, first, _ := b.StartAdopt("s1")
	if !first {
		t.Fatal("the ended session is still marked")
	}
	done()
}

// TestBookConcurrent: concurrent adds, uses and forgets of several
// users keep the book's indexes in step and its caps.
func TestBookConcurrent(t *testing.T) {
	evicted := make(chan Eviction, 1<<12)
	b := New(20, 8, errUnknown, func(ev Eviction) { evicted <- ev })
	var wg sync.WaitGroup
	for u := range 6 {
		wg.Go(func() {
			user := fmt.Sprintf("user%d", u)
			var mine []string
			for i := range 200 {
				mine = append(mine, b.newID(user, HTTPPrefix))
				switch i % 3 {
				case 1:
					b.OwnedBy(mine[i/2], user)
				case 2:
					b.Forget(mine[i/3])
				}
			}
		})
	}
	wg.Wait()
	close(evicted)
	for ev := range evicted {
		ev.Done()
	}
	bookInvariants(t, b)
	if len(b.adopting) != 0 {
		t.Errorf("%d evicted sessions still marked after they ended", len(b.adopting))
	}
}

// BenchmarkBookAdd: adding a session to a full book, which evicts
// one (under either cap), costs the same at a thousand sessions as at a
// hundred thousand.
func BenchmarkBookAdd(b *testing.B) {
	const users = 1000
	for _, n := range []int{1_000, 100_000} {
		for _, cause := range []string{CauseService, CauseUser} {
			b.Run(fmt.Sprintf("sessions=%d/cause=%s", n, cause), func(b *testing.B) {
				perUser := n // the book's max evicts
				if cause == CauseUser {
					perUser = n / users
				}
				names := make([]string, users)
				for u := range names {
					names[u] = "user" + strconv.Itoa(u)
				}
				book := New(n, perUser, errUnknown, func(ev Eviction) { ev.Done() })
				for i := range n {
					book.Add(HTTPPrefix+strconv.Itoa(i), names[i%users])
				}
				b.ResetTimer()
				for i := range b.N {
					book.Add(HTTPPrefix+strconv.Itoa(n+i), names[i%users])
				}
			})
		}
	}
}

// TestPerUser: a user may hold an eighth of the sessions, at least 64,
// and all of them when they are fewer.
func TestPerUser(t *testing.T) {
	for _, tt := range []struct{ total, want int }{
		{10_000, 1_250}, {1_000, 125}, {512, 64}, {65, 64}, {10, 10}, {1, 1},
	} {
		if got := PerUser(tt.total); got != tt.want {
			t.Errorf("PerUser(%d) = %d, want %d", tt.total, got, tt.want)
		}
	}
}

// TestBookManagers: a request's session id manager opens sessions of its
// user, under the adopted id when its context says so, and accepts only
// that user's; the endpoint's own DELETE (WithEnding) and mcp-go's
// sweeper end anyone's.
func TestBookManagers(t *testing.T) {
	b := New(10, 10, errUnknown, nil)
	req := func(ctx context.Context, user string) *http.Request {
		return httptest.NewRequestWithContext(mcpgateway.WithUser(ctx, user), http.MethodPost, "/mcp", nil)
	}
	alice := b.ResolveSessionIdManager(req(t.Context(), "alice"))
	id := alice.Generate()
	if !strings.HasPrefix(id, HTTPPrefix) || len(id) != len(HTTPPrefix)+32 {
		t.Fatalf("generated id %q", id)
	}
	if user, ok := b.Owner(id); !ok || user != "alice" || b.ByHash(Hash(id)) != id {
		t.Fatalf("the new session's owner: %q %v", user, ok)
	}
	if _, err := alice.Validate(id); err != nil {
		t.Errorf("alice's Validate of her session: %v", err)
	}
	bob := b.ResolveSessionIdManager(req(t.Context(), "bob"))
	if _, err := bob.Validate(id); !errors.Is(err, errUnknown) {
		t.Errorf("bob's Validate of alice's session: %v, want errUnknown", err)
	}
	if _, err := bob.Terminate(id); !errors.Is(err, errUnknown) || !b.OwnedBy(id, "alice") {
		t.Errorf("bob's Terminate of alice's session: %v", err)
	}
	if _, err := b.ResolveSessionIdManager(req(WithEnding(t.Context()), "bob")).Terminate(id); err != nil || b.OwnedBy(id, "alice") {
		t.Errorf("the endpoint's own Terminate of alice's session: %v", err)
	}

	ctx := WithAdoption(t.Context(), HTTPPrefix+"adopted")
	if !IsAdoption(ctx) || IsAdoption(t.Context()) {
		t.Fatal("IsAdoption does not tell an adoption")
	}
	if got := b.ResolveSessionIdManager(req(ctx, "alice")).Generate(); got != HTTPPrefix+"adopted" || !b.OwnedBy(got, "alice") {
		t.Errorf("the adoption generated %q", got)
	}
	if _, err := b.ResolveSessionIdManager(nil).Terminate(HTTPPrefix + "adopted"); err != nil || b.Len() != 0 {
		t.Errorf("the sweeper's Terminate: %v, %d sessions left", err, b.Len())
	}
}

// fakeSession is an mcp-go client session with an id.
type fakeSession struct {
	mcpserver.ClientSession
	id string
}

func (s fakeSession) SessionID() string { return s.id }

// TestBookStreamsAndHooks: a session streams while a GET stream is open;
// it is resumable once it negotiated 2025-11-25; an SSE session ends with
// its stream (Unregistered), an HTTP one does not.
func TestBookStreamsAndHooks(t *testing.T) {
	b := New(10, 10, errUnknown, nil)
	r := httptest.NewRequestWithContext(mcpgateway.WithUser(t.Context(), "alice"), http.MethodGet, "/sse", nil)
	sse, err := b.GenerateSSE(t.Context(), r)
	if err != nil || !strings.HasPrefix(sse, SSEPrefix) {
		t.Fatalf("GenerateSSE: %q, %v", sse, err)
	}
	h := b.newID("alice", HTTPPrefix)
	if b.Streaming(h, "alice") {
		t.Error("streaming before a GET stream opened")
	}
	closed := b.OpenStream(h)
	if !b.Streaming(h, "alice") || b.Streaming(h, "bob") || b.Streams() != 1 {
		t.Errorf("with a GET stream open: streaming %v, %d streams", b.Streaming(h, "alice"), b.Streams())
	}
	closed()
	if b.Streaming(h, "alice") || b.Streams() != 0 {
		t.Error("streaming after the GET stream closed")
	}

	srv := mcpserver.NewMCPServer("test", "1")
	for _, v := range []string{mcp.ProtocolVersion20250618, mcp.ProtocolVersion20251125} {
		b.Negotiated(srv.WithContext(t.Context(), fakeSession{id: h}), nil, nil, &mcp.InitializeResult{ProtocolVersion: v})
		if got, want := b.Resumable(h, "alice"), v >= mcp.ProtocolVersion20251125; got != want {
			t.Errorf("negotiated %s: resumable %v, want %v", v, got, want)
		}
	}
	if b.Resumable(h, "bob") {
		t.Error("resumable for another user")
	}

	b.Unregistered(t.Context(), fakeSession{id: h})
	b.Unregistered(t.Context(), fakeSession{id: sse})
	if _, ok := b.Owner(h); !ok {
		t.Error("the HTTP session ended with mcp-go's unregistering it")
	}
	if _, ok := b.Owner(sse); ok {
		t.Error("the SSE session outlived its stream")
	}
}

// TestWaitStreamingHash: a wait by a session's hash ends once the session
// is open here (adopted, say, by the GET that opens its stream) with its
// stream open, not when another session's stream opens, and gives its id
// and user.
func TestWaitStreamingHash(t *testing.T) {
	b := New(10, 10, errUnknown, nil)
	type found struct {
		id, user string
		ok       bool
	}
	got := make(chan found, 1)
	var id string
	gate := make(chan struct{})
	go func() {
		<-gate
		i, u, ok := b.WaitStreamingHash(t.Context(), Hash(id))
		got <- found{i, u, ok}
	}()
	id = b.newID("alice", HTTPPrefix) // not streaming yet
	close(gate)
	defer b.OpenStream(b.newID("alice", HTTPPrefix))() // wakes the wait, which waits on
	select {
	case f := <-got:
		t.Fatalf("the wait ended (%+v) when another session's stream opened", f)
	case <-time.After(50 * time.Millisecond):
	}
	defer b.OpenStream(id)()
	if f := <-got; !f.ok || f.id != id || f.user != "alice" {
		t.Errorf("WaitStreamingHash = %+v, want alice's session %s", f, id)
	}
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, ok := b.WaitStreamingHash(ended, Hash("no-such-session")); ok {
		t.Error("a wait for an unknown session whose ctx ended reports a stream")
	}
}
