package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
)

// openStoreWith opens dsn with opts and closes the store when t ends.
func openStoreWith(t *testing.T, dsn string, opts *Options) *Store {
	t.Helper()
	s, err := Open(t.Context(), dsn, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// sessions returns the pids of the sessions of application app.
func sessions(t *testing.T, admin *sql.DB, app string) []int {
	t.Helper()
	rows, err := admin.QueryContext(t.Context(), `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, app)
	if err != nil {
		t.Error(err)
		return nil
	}
	defer func() { _ = rows.Close() }()
	var pids []int
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			t.Error(err)
			return nil
		}
		pids = append(pids, pid)
	}
	return pids
}

// runQuery does what a query does to the store: lock its conversation,
// read it, save a turn and its events, and unlock.
func runQuery(ctx context.Context, s *Store, user, conv string, i int) error {
	unlock, err := s.Lock(ctx, user, conv)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := s.Version(ctx, user, conv); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	c := &Conversation{UserID: user, ID: conv, Title: "t"}
	turn := &Turn{Messages: json.RawMessage(`[{"role":"user","content":"q"}]`)}
	events := []NewEvent{{Envelope: json.RawMessage(`{"type":"text"}`)}, {Envelope: json.RawMessage(`{"type":"completed"}`)}}
	if err := s.SaveQuery(ctx, c, turn, "q"+string(rune('a'+i)), events); err != nil {
		return err
	}
	if _, err := s.GetConversation(ctx, user, conv); err != nil {
		return err
	}
	_, err = s.Turns(ctx, user, conv)
	return err
}

// TestPoolBounded runs more concurrent queries than the pool has
// connections: every query is saved, and the Store never has more
// connections open than Options.MaxConns.
func TestPoolBounded(t *testing.T) {
	admin := pgAdmin(t)
	app := randomID("elysia_pool_")
	const maxConns = 4
	s := openStoreWith(t, withParam(t, testenv.PostgresDSN(t), "application_name", app), &Options{MaxConns: maxConns})

	var peak atomic.Int64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			peak.Store(max(peak.Load(), int64(len(sessions(t, admin, app)))))
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	})
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			conv := randomID("c")
			for i := range 3 {
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				err := runQuery(ctx, s, "alice", conv, i)
				cancel()
				if err != nil {
					t.Errorf("query %d of goroutine %d: %v", i, g, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	sampler.Wait()
	if p := peak.Load(); p > maxConns {
		t.Errorf("%d connections open at once, want at most %d", p, maxConns)
	}
	if st := s.db.Stats(); st.MaxOpenConnections != maxConns {
		t.Errorf("pool bound %d, want %d", st.MaxOpenConnections, maxConns)
	}
}

// TestQueryHoldsNoConnection holds a conversation's lock while every
// connection of the pool but one is taken: the conversation's reads and
// saves run on the free one, and other locks are still taken, because a
// held lock pins no connection.
func TestQueryHoldsNoConnection(t *testing.T) {
	s := openStoreWith(t, testenv.PostgresDSN(t), &Options{MaxConns: 2, CallTimeout: 3 * time.Second})
	conv := randomID("c")
	unlock := mustLock(t, s, "alice", conv)
	tx, err := s.db.BeginTx(t.Context(), nil) // one of the pool's two connections
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	ctx := t.Context()
	c := &Conversation{UserID: "alice", ID: conv, Title: "t"}
	if err := s.SaveQuery(ctx, c, &Turn{}, "q1", []NewEvent{{Envelope: json.RawMessage(`{}`)}}); err != nil {
		t.Fatalf("SaveQuery under the lock: %v", err)
	}
	if _, err := s.Version(ctx, "alice", conv); err != nil {
		t.Errorf("Version under the lock: %v", err)
	}
	if _, err := s.GetConversation(ctx, "alice", conv); err != nil {
		t.Errorf("GetConversation under the lock: %v", err)
	}
	if _, err := s.Turns(ctx, "alice", conv); err != nil {
		t.Errorf("Turns under the lock: %v", err)
	}
	if _, err := s.Events(ctx, "alice", conv); err != nil {
		t.Errorf("Events under the lock: %v", err)
	}
	for range 3 {
		mustLock(t, s, "alice", randomID("c"))
	}
	unlock()
}

// TestStalledDatabase freezes every backend of a Store (SIGSTOP): a call
// whose ctx has no deadline fails with ErrUnavailable after the call
// timeout instead of hanging for the whole freeze.
func TestStalledDatabase(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("freezing PostgreSQL backends (SIGSTOP) needs root")
	}
	admin := pgAdmin(t)
	app := randomID("elysia_stall_")
	s := openStoreWith(t, withParam(t, testenv.PostgresDSN(t), "application_name", app), &Options{MaxConns: 2, CallTimeout: time.Second})
	if _, err := s.EnsureUser(t.Context(), "alice"); err != nil {
		t.Fatal(err)
	}
	pids := sessions(t, admin, app)
	if len(pids) == 0 {
		t.Fatal("no backend of the store")
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	}
	start := time.Now()
	_, err := s.GetUser(context.WithoutCancel(t.Context()), "alice")
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("GetUser on a frozen database: got %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("GetUser on a frozen database took %v, want about the call timeout (1s)", d)
	}
}

// tcpProxy forwards connections to a target until closed; then its port
// refuses connections, as a stopped database does.
type tcpProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	wg     sync.WaitGroup
}

func startProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target}
	p.wg.Go(p.serve)
	t.Cleanup(p.close)
	return p
}

func (p *tcpProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		p.wg.Go(func() { _, _ = io.Copy(up, c); _ = up.Close() })
		p.wg.Go(func() { _, _ = io.Copy(c, up); _ = c.Close() })
	}
}

// close stops listening and drops every connection.
func (p *tcpProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// TestStoppedDatabase stops the database under a Store (its port refuses
// connections): calls fail at once with ErrUnavailable.
func TestStoppedDatabase(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	s := openStoreWith(t, u.String(), nil)
	if _, err := s.EnsureUser(t.Context(), "alice"); err != nil {
		t.Fatal(err)
	}
	v := openVault(t, s, newKey(t))
	p.close()
	ctx := t.Context()
	if _, err := s.GetUser(ctx, "alice"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("GetUser on a stopped database: got %v, want ErrUnavailable", err)
	}
	c := &Conversation{UserID: "alice", ID: "c1"}
	if err := s.SaveQuery(ctx, c, nil, "q1", nil); !errors.Is(err, ErrUnavailable) {
		t.Errorf("SaveQuery on a stopped database: got %v, want ErrUnavailable", err)
	}
	if _, err := s.Lock(ctx, "alice", "c1"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Lock on a stopped database: got %v, want ErrUnavailable", err)
	}
	if err := s.Ping(ctx); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Ping on a stopped database: got %v, want ErrUnavailable", err)
	}
	// A sign-in started or finished meanwhile is an outage too (503), not
	// "no such sign-in" (400) nor a 500.
	if err := v.PendingRoom(ctx, "alice", PendingCaps{PerUser: 10, Total: 100}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("PendingRoom on a stopped database: got %v, want ErrUnavailable", err)
	}
	if _, err := v.TakePending(ctx, "state"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("TakePending on a stopped database: got %v, want ErrUnavailable", err)
	}
	// A conversation that does not exist is still an answer, not an outage.
	if _, err := s.GetConversation(ctx, "alice", ""); errors.Is(err, ErrUnavailable) {
		t.Errorf("GetConversation with an empty id: got %v, want a plain error", err)
	}
}
