package mcpgateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

// todoProc is a todo-mcp served over HTTP on a port of its own, that a test
// kills and starts again on the same port.
type todoProc struct {
	t         testing.TB
	port      int
	transport string
	db        string
	extra     []string

	mu  sync.Mutex
	cmd *exec.Cmd
	out *testenv.SyncBuffer // what the current process wrote
}

// startTodo starts todo-mcp (with the fault tools) over transport, "http"
// or "sse", on a free port.
func startTodo(tb testing.TB, transport string, extra ...string) *todoProc {
	tb.Helper()
	p := &todoProc{t: tb, port: testenv.FreePort(tb), transport: transport, db: filepath.Join(tb.TempDir(), "todos.db"), extra: extra}
	p.start()
	return p
}

func (p *todoProc) start() {
	p.t.Helper()
	args := append([]string{"--" + p.transport, fmt.Sprintf("127.0.0.1:%d", p.port), "--fault-tools"}, p.extra...)
	cmd := exec.Command(testenv.TodoMCP(p.t), args...) //nolint:noctx // Start's cleanup owns the child
	cmd.Env = append(os.Environ(), "TODO_DB="+p.db)
	out := &testenv.SyncBuffer{Limit: 1 << 20}
	cmd.Stdout, cmd.Stderr = out, out
	testenv.Start(p.t, cmd)
	testenv.WaitHTTP(p.t, fmt.Sprintf("http://127.0.0.1:%d/", p.port), 15*time.Second)
	p.mu.Lock()
	p.cmd, p.out = cmd, out
	p.mu.Unlock()
}

// said reports whether the current process wrote text to its log.
func (p *todoProc) said(text string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Contains(p.out.String(), text)
}

// kill ends the process at once (SIGKILL) and waits until its port
// refuses connections.
func (p *todoProc) kill() {
	p.t.Helper()
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	_ = cmd.Process.Kill()
	testenv.WaitFor(p.t, 10*time.Second, "the killed server's port to close", func() bool { return !listening(p.port) })
}

func (p *todoProc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

func (p *todoProc) url() string {
	if p.transport == "sse" {
		return fmt.Sprintf("http://127.0.0.1:%d/sse", p.port)
	}
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", p.port)
}

// copyOf is a copy entry reaching p.
func (p *todoProc) copyOf(name string) mcpconfig.ServerConfig {
	return mcpconfig.ServerConfig{Name: name, Transport: p.transport, URL: p.url(), Enabled: true}
}

func listening(port int) bool {
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(context.Background(), "tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// withCopies is primary with copies and policy.
func withCopies(primary mcpconfig.ServerConfig, policy string, copies ...mcpconfig.ServerConfig) mcpconfig.ServerConfig {
	primary.Copies, primary.Policy = copies, policy
	return primary
}

var readBy = regexp.MustCompile(`read by pid (\d+)`)

// readPID calls fault_read and returns the pid of the process that answered.
func readPID(tb testing.TB, g *Gateway, ctx context.Context, delay int) (int, error) {
	tb.Helper()
	res, err := g.Execute(ctx, "fault_read", map[string]any{"delay_ms": delay})
	if err != nil {
		return 0, err
	}
	m := readBy.FindStringSubmatch(res.Text())
	if res.IsError || m == nil {
		return 0, fmt.Errorf("fault_read answered %q", res.Text())
	}
	return strconv.Atoi(m[1])
}

func TestFailoverPriority(t *testing.T) {
	t.Parallel()
	a, b := startTodo(t, "http"), startTodo(t, "http")
	g := newGateway(t, withCopies(a.copyOf("todo"), "", b.copyOf("todo")), &Options{CopyProbe: 100 * time.Millisecond})

	// Steady state: the first copy takes every call.
	for range 3 {
		if pid, err := readPID(t, g, t.Context(), 0); err != nil || pid != a.pid() {
			t.Fatalf("steady state: answered by %d (%v), want copy 1 (%d)", pid, err, a.pid())
		}
	}
	if st := g.Status(); st.Serving != "copy 1" || len(st.Copies) != 2 || !st.Copies[0].Serving || st.Copies[1].Serving || st.Policy != "priority" {
		t.Fatalf("status = serving %q, copies %+v", st.Serving, st.Copies)
	}

	// The primary dies: the next call, a write that was never sent, is
	// served by the second copy.
	a.kill()
	res, err := g.Execute(t.Context(), "create_todo", map[string]any{"title": "after the kill"})
	if err != nil || res.IsError {
		t.Fatalf("create_todo after the primary died: %v %+v", err, res)
	}
	if st := g.Status(); st.Serving != "copy 2" || !st.Copies[0].Down || st.Copies[0].LastErr == "" || st.State != session.StateDegraded {
		t.Fatalf("after the kill: state %s, serving %q, copies %+v", st.State, st.Serving, st.Copies)
	}
	if !strings.Contains(g.Description(), "Degraded: copy 1 ("+a.url()+") is down; running on copy 2.") {
		t.Errorf("description while degraded = %q", g.Description())
	}
	if pid, err := readPID(t, g, t.Context(), 0); err != nil || pid != b.pid() {
		t.Fatalf("after the kill: answered by %d (%v), want copy 2 (%d)", pid, err, b.pid())
	}

	// The primary comes back: a health check sees it, and it takes the
	// calls again.
	a.start()
	testenv.WaitFor(t, 10*time.Second, "the primary to take the calls back", func() bool { return g.Status().Serving == "copy 1" })
	if pid, err := readPID(t, g, t.Context(), 0); err != nil || pid != a.pid() {
		t.Fatalf("after the primary came back: answered by %d (%v), want copy 1 (%d)", pid, err, a.pid())
	}
	if strings.Contains(g.Description(), "Degraded") {
		t.Errorf("description after recovery = %q", g.Description())
	}
}

func TestFailoverNeverRunsAWriteTwice(t *testing.T) {
	t.Parallel()
	a, b := startTodo(t, "http"), startTodo(t, "http")
	g := newGateway(t, withCopies(a.copyOf("todo"), "", b.copyOf("todo")), nil)
	if _, err := g.List(t.Context()); err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		res *CallResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := g.Execute(t.Context(), "fault", map[string]any{"mode": "hang"})
		done <- outcome{res, err}
	}()
	testenv.WaitFor(t, 5*time.Second, "the call to reach copy 1", func() bool { return a.said("fault: hanging") })
	a.kill()
	var o outcome
	select {
	case o = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not end after its copy died")
	}
	if o.err != nil || o.res == nil || !o.res.IsError {
		t.Fatalf("fault on a dying copy = %+v, %v; want an isError result", o.res, o.err)
	}
	want := fmt.Sprintf("fault may have run on copy 1 (%s) of server \"todo\"", a.url())
	if !strings.Contains(o.res.Text(), want) || !strings.Contains(o.res.Text(), "was not retried on another copy") {
		t.Errorf("result = %q\nwant it to contain %q", o.res.Text(), want)
	}
	if st := g.Status(); st.Copies[1].Calls != 0 {
		t.Errorf("copy 2 got %d calls; the write must not be replayed there", st.Copies[1].Calls)
	}
}

func TestFailoverRetriesAReadInFlight(t *testing.T) {
	t.Parallel()
	a, b := startTodo(t, "http"), startTodo(t, "http")
	g := newGateway(t, withCopies(a.copyOf("todo"), "", b.copyOf("todo")), nil)
	if _, err := g.List(t.Context()); err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		pid int
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		pid, err := readPID(t, g, t.Context(), 1500)
		done <- outcome{pid, err}
	}()
	testenv.WaitFor(t, 5*time.Second, "the read to reach copy 1", func() bool { return a.said("fault_read: reading") })
	a.kill()
	o := <-done
	if o.err != nil || o.pid != b.pid() {
		t.Fatalf("read in flight on a dying copy: answered by %d (%v), want copy 2 (%d)", o.pid, o.err, b.pid())
	}
}

func TestFailoverRoundRobin(t *testing.T) {
	t.Parallel()
	a, b := startTodo(t, "http"), startTodo(t, "sse")
	g := newGateway(t, withCopies(a.copyOf("todo"), mcpconfig.PolicyRoundRobin, b.copyOf("todo")), nil)
	seen := map[int]int{}
	for range 10 {
		pid, err := readPID(t, g, t.Context(), 0)
		if err != nil {
			t.Fatal(err)
		}
		seen[pid]++
	}
	if seen[a.pid()] != 5 || seen[b.pid()] != 5 {
		t.Errorf("round robin over two copies: %v, want 5 calls each (a=%d b=%d)", seen, a.pid(), b.pid())
	}
	if st := g.Status(); st.Serving != "copy 1, copy 2" || st.Copies[0].Calls != 5 || st.Copies[1].Calls != 5 {
		t.Errorf("status: serving %q, copies %+v", st.Serving, st.Copies)
	}
	// One copy down: the other takes every call.
	b.kill()
	for range 4 {
		if pid, err := readPID(t, g, t.Context(), 0); err != nil || pid != a.pid() {
			t.Fatalf("with copy 2 down: answered by %d (%v)", pid, err)
		}
	}
}

func TestFailoverEveryCopyDown(t *testing.T) {
	t.Parallel()
	a, b := startTodo(t, "http"), startTodo(t, "http")
	missing := mcpconfig.ServerConfig{Name: "todo", Transport: mcpconfig.TransportStdio, Command: filepath.Join(t.TempDir(), "no-such-server"), Enabled: true}
	g := newGateway(t, withCopies(a.copyOf("todo"), "", b.copyOf("todo"), missing), nil)
	other := newGateway(t, todoStdio(t), nil)
	a.kill()
	b.kill()
	_, err := g.Execute(t.Context(), "list_todos", nil)
	if err == nil {
		t.Fatal("a call with every copy down succeeded")
	}
	for _, want := range []string{`server "todo": every copy failed: copy 1 (` + a.url() + `): `, `; copy 2 (` + b.url() + `): `,
		"; copy 3 (" + missing.Command + "): ", "connection refused", "no-such-server"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error = %v\nwant it to name %q", err, want)
		}
	}
	// The model is told which copies failed and why.
	res, rerr := g.Run(t.Context(), tools.Call{Args: map[string]any{"action": "execute", "tool_name": "list_todos"}}, tools.Discard)
	if rerr != nil || !res.IsError || !strings.Contains(res.Error, "every copy failed") || !strings.Contains(res.Feedback, "no copy of server todo could take the call") {
		t.Errorf("Run with every copy down = %+v, %v", res, rerr)
	}
	if st := g.Status(); st.Serving != "" || !st.Copies[0].Down || !st.Copies[1].Down || !st.Copies[2].Down {
		t.Errorf("status with every copy down: serving %q, copies %+v", st.Serving, st.Copies)
	}
	if !strings.Contains(g.Description(), "Degraded: every copy is down") {
		t.Errorf("description = %q", g.Description())
	}
	// The rest of the service is not affected.
	if _, err := other.Execute(t.Context(), "list_todos", nil); err != nil {
		t.Errorf("another server while every copy of todo is down: %v", err)
	}
}

func TestFailoverFromABrokenStdioPrimary(t *testing.T) {
	t.Parallel()
	b := startTodo(t, "http")
	broken := mcpconfig.ServerConfig{Name: "todo", Transport: mcpconfig.TransportStdio, Command: filepath.Join(t.TempDir(), "no-such-server"), Enabled: true}
	g := newGateway(t, withCopies(broken, "", b.copyOf("todo")), nil)
	if pid, err := readPID(t, g, t.Context(), 0); err != nil || pid != b.pid() {
		t.Fatalf("with the stdio primary broken: answered by %d (%v), want copy 2 (%d)", pid, err, b.pid())
	}
	if ok, why := g.Available(nil); !ok {
		t.Errorf("a server with a working copy is unavailable: %s", why)
	}
}

func TestFailoverPerUserSessionsStayOnTheirCopy(t *testing.T) {
	t.Parallel()
	a, b := startTodo(t, "http"), startTodo(t, "http")
	primary := a.copyOf("todo")
	primary.PerUser = true
	g := newGateway(t, withCopies(primary, mcpconfig.PolicyRoundRobin, b.copyOf("todo")), nil)
	home := map[string]int{}
	for range 3 {
		for _, user := range []string{"alice", "bob"} {
			pid, err := readPID(t, g, WithUser(t.Context(), user), 0)
			if err != nil {
				t.Fatal(err)
			}
			if h, ok := home[user]; ok && h != pid {
				t.Fatalf("%s's calls moved from %d to %d with both copies up", user, h, pid)
			}
			home[user] = pid
		}
	}
	if home["alice"] == home["bob"] {
		t.Errorf("both users on one copy (%d): round robin gives each user's session a copy in turn", home["alice"])
	}
	// alice's copy dies: her calls move; bob's stay.
	victim, survivor := a, b
	if home["alice"] == b.pid() {
		victim, survivor = b, a
	}
	victim.kill()
	if pid, err := readPID(t, g, WithUser(t.Context(), "alice"), 0); err != nil || pid != survivor.pid() {
		t.Fatalf("alice after her copy died: answered by %d (%v), want %d", pid, err, survivor.pid())
	}
	if pid, err := readPID(t, g, WithUser(t.Context(), "bob"), 0); err != nil || pid != survivor.pid() {
		t.Fatalf("bob: answered by %d (%v), want %d", pid, err, survivor.pid())
	}
}

func TestFailoverUsesTheServingCopysTools(t *testing.T) {
	t.Parallel()
	a := startTodo(t, "http")
	// The second copy is todo-mcp without the fault tools: a different list.
	port := testenv.FreePort(t)
	cmd := exec.Command(testenv.TodoMCP(t), "--http", fmt.Sprintf("127.0.0.1:%d", port)) //nolint:noctx // Start's cleanup owns the child
	cmd.Env = append(os.Environ(), "TODO_DB="+filepath.Join(t.TempDir(), "todos.db"))
	testenv.Start(t, cmd)
	testenv.WaitHTTP(t, fmt.Sprintf("http://127.0.0.1:%d/", port), 15*time.Second)
	b := mcpconfig.ServerConfig{Name: "todo", Transport: mcpconfig.TransportHTTP, URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port), Enabled: true}
	logs := &testenv.SyncBuffer{}
	g := newGateway(t, withCopies(a.copyOf("todo"), "", b), &Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	infos, err := g.List(t.Context())
	if err != nil || len(infos) != 7 {
		t.Fatalf("list on copy 1: %d tools, %v", len(infos), err)
	}
	a.kill()
	if _, err := g.Execute(t.Context(), "list_todos", nil); err != nil {
		t.Fatal(err)
	}
	infos, err = g.List(t.Context())
	if err != nil || len(infos) != 5 {
		t.Fatalf("list on copy 2: %d tools, %v; want its own 5, not a union", len(infos), err)
	}
	testenv.WaitFor(t, 5*time.Second, "the difference to be logged", func() bool {
		return strings.Contains(logs.String(), "copies list different tools") && strings.Contains(logs.String(), `"missing":["fault","fault_read"]`)
	})
}

func TestCopyFlapsBackOff(t *testing.T) {
	t.Parallel()
	b := startTodo(t, "http")
	g := newGateway(t, withCopies(b.copyOf("todo"), "", b.copyOf("todo")), &Options{CopyProbe: time.Second, CircuitOpenFor: 8 * time.Second})
	c := g.copies[0]
	var waits []time.Duration
	for range 5 {
		g.markDown(c, fmt.Errorf("transport failure"))
		c.mu.Lock()
		waits = append(waits, c.backoff)
		c.mu.Unlock()
		g.markUp(c) // it answers at once, and fails again within the flap window
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second}
	if fmt.Sprint(waits) != fmt.Sprint(want) {
		t.Errorf("waits before each check of a flapping copy = %v, want %v", waits, want)
	}
}

func TestCopyOnAnotherOriginKeepsItsOwnTokens(t *testing.T) {
	base := &mcpauth.MemoryTokenStore{}
	key := mcpauth.TokenKey{Server: "todo", User: "alice"}
	if err := base.Put(t.Context(), key, &mcpauth.Token{AccessToken: "primary-token", Resource: "http://a.example/mcp"}); err != nil {
		t.Fatal(err)
	}
	ct := copyTokens{base, "#copy 2"}
	if _, err := ct.Get(t.Context(), key); err == nil {
		t.Fatal("a copy on another origin read the server's own token")
	}
	if err := ct.Put(t.Context(), key, &mcpauth.Token{AccessToken: "copy-token", Resource: "http://b.example/mcp"}); err != nil {
		t.Fatal(err)
	}
	if tok, err := base.Get(t.Context(), key); err != nil || tok.AccessToken != "primary-token" {
		t.Errorf("the copy's sign-in replaced the server's own token: %v %v", tok, err)
	}
	for u, want := range map[string]string{"http://A.example:80/mcp": "http://a.example:80", "https://a.example/x": "https://a.example", "": ""} {
		if got := origin(u); got != want {
			t.Errorf("origin(%q) = %q, want %q", u, got, want)
		}
	}
}

// TestSignInIsNoCopyFailure: a user who has not signed in to a copy does
// not take that copy away from every other user.
func TestSignInIsNoCopyFailure(t *testing.T) {
	err := fmt.Errorf("connect: %w", &mcpauth.SignInRequiredError{Server: "todo"})
	if failoverErr(t.Context(), err) {
		t.Error("a missing sign-in marks the copy down")
	}
	if !failoverErr(t.Context(), errors.New("connection refused")) {
		t.Error("a transport failure does not mark the copy down")
	}
}
