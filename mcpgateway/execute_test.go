package mcpgateway

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
)

// countingSecrets is a UserSecrets that counts its reads.
type countingSecrets struct {
	memoryUserSecrets
	reads atomic.Int64
}

func (c *countingSecrets) Secret(ctx context.Context, user, name string) (string, error) {
	c.reads.Add(1)
	return c.memoryUserSecrets.Secret(ctx, user, name)
}

// userKeyed is a per-user server that takes ${user:API_KEY}, whose users'
// sessions (and shared one) dial p's in-process servers; dials records
// what each user's conn reported as its last error when it dialled.
type userKeyed struct {
	p       *inProcess
	g       *Gateway
	secrets *countingSecrets

	mu    sync.Mutex
	dials []string
}

func newUserKeyed(t *testing.T) *userKeyed {
	t.Helper()
	cfg := parseOK(t, `{"servers": {"todo": {"type": "http", "url": "http://in-process/mcp",
		"headers": {"Authorization": "Bearer ${user:API_KEY}"}}}}`, nil).Servers[0]
	u := &userKeyed{p: &inProcess{ran: map[string]int{}}, secrets: &countingSecrets{}}
	u.secrets.Set("alice", "API_KEY", "key-alice")
	u.g = newGateway(t, cfg, &Options{UserSecrets: u.secrets})
	u.g.shared.conns[0].SetDialer(u.p.dial(u.g.shared.conns[0]))
	u.g.childDialer = func(c *session.Conn) func(context.Context) (*session.Session, error) {
		dial := u.p.dial(c)
		return func(hsCtx context.Context) (*session.Session, error) {
			u.mu.Lock()
			u.dials = append(u.dials, c.Status().LastErr)
			u.mu.Unlock()
			return dial(hsCtx)
		}
	}
	return u
}

// conn returns user's conn.
func (u *userKeyed) conn(user string) *session.Conn {
	u.g.mu.Lock()
	defer u.g.mu.Unlock()
	return u.g.users[user].v.conns[0]
}

// TestExecuteReadsUserSecretsOnce: one execute on a per-user server reads
// the user's secrets once, warm or retried on a new session: it acquires
// the user's session once and lists, calls and retries on it. (It used to
// acquire it again to list and to call, and again to retry: three reads
// warm, four retried.)
func TestExecuteReadsUserSecretsOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		u := newUserKeyed(t)
		ctx := WithUser(t.Context(), "alice")
		if _, err := u.g.Execute(ctx, "lookup", nil); err != nil {
			t.Fatal(err)
		}
		u.secrets.reads.Store(0)
		if _, err := u.g.Execute(ctx, "lookup", nil); err != nil {
			t.Fatal(err)
		}
		if n := u.secrets.reads.Load(); n != 1 {
			t.Errorf("a warm execute read the user's secret %d times, want once", n)
		}

		u.p.loseNext(1)
		u.secrets.reads.Store(0)
		if cr, err := u.g.Execute(ctx, "lookup", nil); err != nil || cr.IsError {
			t.Fatalf("Execute = %v %+v, want success after one retry", err, cr)
		}
		if got := u.p.runs("lookup"); got != 4 {
			t.Errorf("lookup ran %d times, want 4 (the third execute retried)", got)
		}
		if n := u.secrets.reads.Load(); n != 1 {
			t.Errorf("a retried execute read the user's secret %d times, want once", n)
		}
	})
}

// TestPerUserRetryRetiresTheUsersSession: the retry of a read-only tool on a
// per-user server retires the user's own lost session before it dials
// again, and leaves the server's shared session alone.
func TestPerUserRetryRetiresTheUsersSession(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		u := newUserKeyed(t)
		shared, err := u.g.shared.conns[0].Session(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		ctx := WithUser(t.Context(), "alice")
		if _, err := u.g.Execute(ctx, "lookup", nil); err != nil {
			t.Fatal(err)
		}
		lost := u.conn("alice").Current()
		u.p.loseNext(1)
		if cr, err := u.g.Execute(ctx, "lookup", nil); err != nil || cr.IsError {
			t.Fatalf("Execute = %v %+v, want success after one retry", err, cr)
		}
		synctest.Wait()
		u.mu.Lock()
		dials := append([]string(nil), u.dials...)
		u.mu.Unlock()
		if len(dials) != 2 || !strings.Contains(dials[1], "connection reset") {
			t.Errorf("alice's conn dialled %d times, the retry's dial seeing last error %q; want 2, the lost session retired first",
				len(dials), dials[len(dials)-1])
		}
		if cur := u.conn("alice").Current(); cur == nil || cur == lost {
			t.Errorf("alice's current session = %p, want a new one (lost %p)", cur, lost)
		}
		if cur := u.g.shared.conns[0].Current(); cur != shared {
			t.Errorf("the shared session = %p, want %p untouched", cur, shared)
		}
		if st := u.g.shared.conns[0].Status(); st.State != session.StateConnected || st.LastErr != "" {
			t.Errorf("the shared conn is %s (last error %q), want connected with no error", st.State, st.LastErr)
		}
	})
}
