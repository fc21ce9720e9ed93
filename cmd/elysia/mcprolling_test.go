package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/internal/testenv"
)

// A rolling restart, as an operator does one: two replicas on one
// PostgreSQL database behind a load balancer without sticky sessions,
// MCP clients calling tools through it without pause, and one replica
// taken out of the balancer, sent SIGTERM, and started again. Every call
// must be answered, and every answered call must have run exactly once.

// rollingBalancer is a round-robin load balancer over the replicas in
// rotation, as a client's HTTP transport. A request whose connection is
// refused (a replica that stopped listening) goes to the next replica, as
// a balancer's passive health check sends it; one that reached a replica is
// never sent again.
type rollingBalancer struct {
	backends atomic.Pointer[[]*url.URL]
	next     atomic.Uint64
}

func (b *rollingBalancer) set(urls ...string) {
	var us []*url.URL
	for _, s := range urls {
		u, err := url.Parse(s)
		if err != nil {
			panic(err)
		}
		us = append(us, u)
	}
	b.backends.Store(&us)
}

func (b *rollingBalancer) RoundTrip(r *http.Request) (*http.Response, error) {
	us := *b.backends.Load()
	start := int(b.next.Add(1))
	var err error
	for i := range us {
		u := us[(start+i)%len(us)]
		rr := r.Clone(r.Context())
		rr.URL.Scheme, rr.URL.Host, rr.Host = u.Scheme, u.Host, u.Host
		if r.GetBody != nil {
			if rr.Body, err = r.GetBody(); err != nil {
				return nil, err
			}
		}
		var res *http.Response
		res, err = http.DefaultTransport.RoundTrip(rr)
		if op, ok := errors.AsType[*net.OpError](err); ok && op.Op == "dial" {
			continue // not sent: the next replica takes it
		}
		return res, err
	}
	return nil, err
}

// workServer is an MCP server in this process, over Streamable HTTP, the
// replicas' upstream: its tool "work" takes a title and ms, works for ms
// milliseconds (or until cancelled) and records that the title ran, and
// whether it finished or was cancelled.
type workServer struct {
	url string
	// mu guards the maps.
	mu                       sync.Mutex
	ran, finished, cancelled map[string]int
}

func newWorkServer(tb testing.TB) *workServer {
	tb.Helper()
	w := &workServer{ran: map[string]int{}, finished: map[string]int{}, cancelled: map[string]int{}}
	s := mcpserver.NewMCPServer("work", "1")
	s.AddTool(mcp.NewTool("work", mcp.WithString("title", mcp.Required()), mcp.WithNumber("ms", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			title := req.GetString("title", "")
			w.count(w.ran, title)
			select {
			case <-time.After(time.Duration(req.GetFloat("ms", 0)) * time.Millisecond):
				w.count(w.finished, title)
				return mcp.NewToolResultText("worked on " + title), nil
			case <-ctx.Done():
				w.count(w.cancelled, title)
				return nil, ctx.Err()
			}
		})
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(s, mcpserver.WithDisableLocalhostProtection(true)))
	tb.Cleanup(hs.Close)
	w.url = hs.URL + "/mcp"
	return w
}

func (w *workServer) count(m map[string]int, title string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m[title]++
}

// rollingOutcome is what one call came back with.
type rollingOutcome struct {
	title string
	err   string // "" when answered
	isErr bool   // answered with an isError result
}

// rollingStats sums up a rolling restart.
type rollingStats struct {
	calls, answered, toolErrors int
	// failed counts the calls that got no answer, by error text.
	failed map[string]int
	// ranTwice counts the calls the upstream ran more than once,
	// ranUnanswered those it finished whose call got no answer,
	// answeredNotRun those answered as a success it did not finish,
	// cancelled those it was told to cancel.
	ranTwice, ranUnanswered, answeredNotRun, cancelled int
	// inFlight counts the calls in flight when SIGTERM was sent.
	inFlight int
	// stopTook is how long the stopped replica took to exit.
	stopTook time.Duration
}

func (s rollingStats) lost() int {
	n := s.ranTwice + s.ranUnanswered + s.answeredNotRun
	for _, c := range s.failed {
		n += c
	}
	return n
}

func (s rollingStats) String() string {
	var kinds []string
	for k, n := range s.failed {
		kinds = append(kinds, fmt.Sprintf("%d× %s", n, k))
	}
	slices.Sort(kinds)
	return fmt.Sprintf("%d calls (%d in flight at SIGTERM), %d answered (%d isError), %d unanswered %v, %d ran twice, %d finished unanswered, %d answered but not finished, %d cancelled upstream; the stopped replica exited after %v",
		s.calls, s.inFlight, s.answered, s.toolErrors, s.calls-s.answered, kinds, s.ranTwice, s.ranUnanswered, s.answeredNotRun, s.cancelled, s.stopTook.Round(10*time.Millisecond))
}

// mcpRollingRestart runs clients MCP clients through a balancer over two
// replicas for d, each call working for work upstream, and restarts the
// first replica a third of the way in.
func mcpRollingRestart(tb testing.TB, clients int, d, work time.Duration) rollingStats {
	tb.Helper()
	dsn := testenv.PostgresDSN(tb)
	up := newWorkServer(tb)
	var dirs [2]string
	var reps [2]*serviceProc
	start := func(i int) *serviceProc {
		return startService(tb, serveOptions{
			Dir:    dirs[i],
			Config: fmt.Sprintf(`{"servers": {"up": {"type": "http", "url": %q}}}`, up.url),
			Args:   []string{"--db", dsn, "--shutdown-grace", "10s"},
		})
	}
	for i := range dirs {
		dirs[i] = tb.TempDir()
		reps[i] = start(i)
	}
	lb := &rollingBalancer{}
	lb.set(reps[0].URL, reps[1].URL)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hc := &http.Client{Transport: lb}
	cs := make([]*mcpclient.Client, clients)
	for i := range cs {
		cs[i] = rollingClient(tb, ctx, hc)
	}

	var (
		mu       sync.Mutex
		outcomes []rollingOutcome
		inFlight atomic.Int64
		wg       sync.WaitGroup
	)
	stop := make(chan struct{})
	for i, c := range cs {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				inFlight.Add(1)
				o := rollingCall(ctx, c, fmt.Sprintf("rr-%d-%d", i, n), work)
				inFlight.Add(-1)
				mu.Lock()
				outcomes = append(outcomes, o)
				mu.Unlock()
			}
		})
	}

	time.Sleep(d / 3) // load before the restart
	lb.set(reps[1].URL)
	atStop := inFlight.Load()
	sent := time.Now()
	if err := reps[0].cmd.Process.Signal(syscall.SIGTERM); err != nil {
		tb.Fatal(err)
	}
	select {
	case <-reps[0].done:
	case <-time.After(30 * time.Second):
		tb.Fatalf("the replica did not stop within 30 s of SIGTERM:\n%s", reps[0].Output())
	}
	stopTook := time.Since(sent)
	reps[0] = start(0)
	lb.set(reps[0].URL, reps[1].URL)
	time.Sleep(d - time.Since(sent) - d/3) // load after it
	close(stop)
	wg.Wait()

	stats := rollingStats{failed: map[string]int{}, inFlight: int(atStop), stopTook: stopTook}
	up.mu.Lock()
	defer up.mu.Unlock()
	for _, o := range outcomes {
		stats.calls++
		finished := up.finished[o.title]
		switch {
		case o.err != "":
			stats.failed[rollingErrorKind(o.err)]++
			if finished > 0 {
				stats.ranUnanswered++
			}
		case o.isErr:
			stats.answered++
			stats.toolErrors++
		default:
			stats.answered++
			if finished == 0 {
				stats.answeredNotRun++
			}
		}
		if up.ran[o.title] > 1 {
			stats.ranTwice++
		}
		stats.cancelled += up.cancelled[o.title]
	}
	return stats
}

// rollingClient connects an MCP client through hc and initializes it; it
// is closed when the test ends.
func rollingClient(tb testing.TB, ctx context.Context, hc *http.Client) *mcpclient.Client {
	tb.Helper()
	c, err := mcpclient.NewStreamableHttpClient("http://balancer/mcp", mcptransport.WithHTTPBasicClient(hc))
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	ictx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	req.Params.ClientInfo = mcp.Implementation{Name: "rolling", Version: "1"}
	if _, err := c.Initialize(ictx, req); err != nil {
		tb.Fatalf("initialize: %v", err)
	}
	return c
}

// rollingCall has the upstream work on title for work and says how the
// call came back.
func rollingCall(ctx context.Context, c *mcpclient.Client, title string, work time.Duration) rollingOutcome {
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "up__work", map[string]any{"title": title, "ms": work.Milliseconds()}
	res, err := c.CallTool(cctx, req)
	if err != nil {
		return rollingOutcome{title: title, err: err.Error()}
	}
	return rollingOutcome{title: title, isErr: res.IsError}
}

// rollingErrorKind shortens an error to its kind, for the summary.
func rollingErrorKind(s string) string {
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// TestPostgresMCPRollingRestart: through a rolling restart of one of two
// replicas under MCP clients calling without pause (each call working for
// 2 s upstream, so that SIGTERM finds calls in flight), no call is lost:
// each is answered, and each answered call ran exactly once.
func TestPostgresMCPRollingRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three service processes and runs for 10 s")
	}
	t.Parallel()
	s := mcpRollingRestart(t, 10, 10*time.Second, 2*time.Second)
	t.Log(s)
	if s.lost() != 0 || s.toolErrors != 0 || s.inFlight == 0 {
		t.Errorf("rolling restart: %v; want every call answered, none an error, each run once, some in flight at SIGTERM", s)
	}
}

// BenchmarkMCPRollingRestart is the rolling restart of
// TestPostgresMCPRollingRestart under 50 clients for 30 s (b.N is not
// used: run it with -benchtime 1x). It reports the calls and the lost ones.
func BenchmarkMCPRollingRestart(b *testing.B) {
	s := mcpRollingRestart(b, 50, 30*time.Second, 2*time.Second)
	b.Log(s)
	b.ReportMetric(float64(s.calls), "calls")
	b.ReportMetric(float64(s.inFlight), "in-flight-at-sigterm")
	b.ReportMetric(float64(s.lost()), "lost")
	b.ReportMetric(float64(s.toolErrors), "tool-errors")
	b.ReportMetric(s.stopTook.Seconds(), "stop-s")
}
