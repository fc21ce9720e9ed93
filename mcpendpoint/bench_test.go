package mcpendpoint

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpendpoint/internal/jsonrpc"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// hundredServers is an endpoint in tools mode over 100 servers of 10
// tools each, in this process over Streamable HTTP.
func hundredServers(b *testing.B) *Endpoint {
	b.Helper()
	src := &source{expose: mcpconfig.DefaultExpose()}
	src.expose.Mode = mcpconfig.ExposeTools
	for i := range 100 {
		s := mcpserver.NewMCPServer("up", "1")
		for j := range 10 {
			s.AddTool(mcp.NewTool(fmt.Sprintf("tool_%d", j), mcp.WithDescription("a tool of the benchmark"), mcp.WithString("q")),
				func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return mcp.NewToolResultText("ok"), nil
				})
		}
		hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(s, mcpserver.WithDisableLocalhostProtection(true)))
		b.Cleanup(hs.Close)
		g := mcpgateway.New(mcpconfig.ServerConfig{Name: fmt.Sprintf("s%03d", i), Transport: mcpconfig.TransportHTTP,
			URL: hs.URL + "/mcp", Enabled: true, ConnectTimeout: 5 * time.Second, CallTimeout: 5 * time.Second}, nil)
		b.Cleanup(func() { _ = g.Close() })
		src.gws = append(src.gws, g)
	}
	return New(src, nil)
}

// BenchmarkToolsList100Servers measures a client's tools/list over 100
// servers of 10 tools each once their tools are cached, over HTTP with
// mcp-go's client decoding the answer. The client keeps its GET stream
// open, as the TypeScript and Python SDKs' clients do:
//
//	go test -run '^$' -bench BenchmarkToolsList100Servers ./mcpendpoint/
func BenchmarkToolsList100Servers(b *testing.B) {
	_, c := streamingClient(b)
	res, err := c.ListTools(b.Context(), mcp.ListToolsRequest{}) // lists every server once
	if err != nil || len(res.Tools) != 1000 {
		b.Fatalf("first list: %v, %d tools", err, len(res.Tools))
	}
	for b.Loop() {
		if _, err := c.ListTools(b.Context(), mcp.ListToolsRequest{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkToolsList100ServersHTTP is the endpoint's part of it over HTTP:
// the POST of a session whose GET stream is open, on loopback, its answer
// read but not decoded.
func BenchmarkToolsList100ServersHTTP(b *testing.B) {
	url, c := streamingClient(b)
	sid := c.GetSessionId()
	post := func() int {
		req, _ := http.NewRequestWithContext(b.Context(), http.MethodPost, url+"/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return int(n)
	}
	if n := post(); n < 100_000 { // lists every server once
		b.Fatalf("first list: %d bytes", n)
	}
	for b.Loop() {
		post()
	}
}

// BenchmarkToolsList100ServersHandle is the endpoint's own part without
// HTTP: the answer built from the encoded catalog (Streamable HTTP with a
// GET stream, stdio), and mcp-go's (legacy SSE, HTTP without a GET
// stream).
func BenchmarkToolsList100ServersHandle(b *testing.B) {
	ep := hundredServers(b)
	ctx := mcpgateway.WithUser(b.Context(), "alice")
	msg := json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if _, err := json.Marshal(ep.srv.HandleMessage(ctx, msg)); err != nil { // lists every server once
		b.Fatal(err)
	}
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			m, _ := jsonrpc.Decode(msg) // as a stdio line is
			if _, ok := ep.fastList(ctx, "alice", m, anyVersion); !ok {
				b.Fatal("not answered")
			}
		}
	})
	b.Run("mcp-go", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(ep.srv.HandleMessage(ctx, msg)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// streamingClient serves hundredServers over HTTP and returns its base
// URL and mcp-go's client of it, initialized (as alice) with its GET
// stream open.
func streamingClient(b *testing.B) (string, *mcpclient.Client) {
	b.Helper()
	ep := hundredServers(b)
	hs := httptest.NewServer(httpHandler(ep))
	b.Cleanup(hs.Close)
	b.Cleanup(func() { _ = ep.Close(context.Background()) })
	//lint:ignore SA1019 the GET stream of the protocol the endpoint serves (2025-11-25)
	c, err := mcpclient.NewStreamableHttpClient(hs.URL+"/mcp", mcptransport.WithContinuousListening()) //nolint:staticcheck // see above
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Start(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	if _, err := c.Initialize(b.Context(), req); err != nil {
		b.Fatal(err)
	}
	testenv.WaitFor(b, 10*time.Second, "the client's GET stream to open", func() bool {
		return ep.sessions.Streaming(c.GetSessionId(), "alice")
	})
	return hs.URL, c
}

// BenchmarkSessions1000 opens 1,000 Streamable HTTP sessions
// (initialize, then notifications/initialized) on an endpoint over one
// server and reports the memory they hold (heap after a GC, plus
// goroutine stacks), per session; the target is under 64 MiB for the
// 1,000. "posts" opens sessions alone; "streams" also keeps each one's GET
// stream open, as the SDKs' clients do, from a client in another process
// so that only the service's side is counted:
//
//	go test -run '^$' -bench BenchmarkSessions1000 -benchtime 1x ./mcpendpoint/
func BenchmarkSessions1000(b *testing.B) {
	const n = 1000
	for _, streams := range []bool{false, true} {
		name := map[bool]string{false: "posts", true: "streams"}[streams]
		b.Run(name, func(b *testing.B) {
			b.StopTimer()
			for range b.N {
				src := &source{expose: mcpconfig.DefaultExpose()}
				ep := New(src, nil)
				hs := httptest.NewServer(httpHandler(ep))
				heap0, stacks0 := inUse()
				goroutines := runtime.NumGoroutine()
				b.StartTimer()
				var child *exec.Cmd
				var stdin io.WriteCloser
				if streams {
					child, stdin = sessionsChild(b, hs.URL, n)
					deadline := time.Now().Add(60 * time.Second)
					for ep.sessions.Streams() < n {
						if time.Now().After(deadline) {
							b.Fatalf("%d GET streams open after a minute, want %d", ep.sessions.Streams(), n)
						}
						time.Sleep(20 * time.Millisecond) // polling, bounded by the deadline
					}
				} else {
					for range n {
						benchSession(b, hs.URL)
					}
				}
				b.StopTimer()
				heap, stacks := inUse()
				total := float64(heap+stacks) - float64(heap0+stacks0)
				b.ReportMetric(total/n, "B/session")
				b.ReportMetric((float64(stacks)-float64(stacks0))/n, "stack-B/session")
				b.ReportMetric(total/(1<<20), "MiB/1000")
				b.ReportMetric(float64(runtime.NumGoroutine()-goroutines)/n, "goroutines/session")
				if got := ep.sessions.Len(); got != n {
					b.Fatalf("%d sessions open, want %d", got, n)
				}
				if child != nil {
					_ = stdin.Close()
					_ = child.Wait()
				}
				_ = ep.Close(context.Background())
				hs.Close()
			}
		})
	}
}

// sessionsChild starts this test binary as a client that opens n sessions
// of base with their GET streams (TestSessionsClient) and waits until it
// says they are open; closing stdin ends it.
func sessionsChild(b *testing.B, base string, n int) (*exec.Cmd, io.WriteCloser) {
	b.Helper()
	cmd := exec.CommandContext(b.Context(), os.Args[0], "-test.run", "^TestSessionsClient$")
	cmd.Env = append(os.Environ(), "ELYSIA_BENCH_SESSIONS_URL="+base, "ELYSIA_BENCH_SESSIONS="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready") {
		b.Fatalf("client: %q, %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }() // ends with the child
	return cmd, stdin
}

// TestSessionsClient is BenchmarkSessions1000's client process: it runs
// only when the benchmark starts it.
func TestSessionsClient(t *testing.T) {
	base := os.Getenv("ELYSIA_BENCH_SESSIONS_URL")
	if base == "" {
		t.Skip("BenchmarkSessions1000 starts it")
	}
	n, _ := strconv.Atoi(os.Getenv("ELYSIA_BENCH_SESSIONS"))
	http.DefaultTransport.(*http.Transport).MaxIdleConnsPerHost = 2 * n
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for range n {
		id := benchSession(t, base)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/mcp", nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET stream: %v %v", resp, err)
		}
		wg.Go(func() { _, _ = io.Copy(io.Discard, resp.Body); _ = resp.Body.Close() })
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin) // until the benchmark is done
	cancel()
	wg.Wait()
}

// inUse is the live heap after a full collection and the goroutine
// stacks.
func inUse() (heap, stacks uint64) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc, m.StackInuse
}

// benchSession opens one session as a client that has just started does.
func benchSession(tb testing.TB, base string) string {
	tb.Helper()
	post := func(session, body string) *http.Response {
		req, _ := http.NewRequestWithContext(tb.Context(), http.MethodPost, base+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", mcp.ProtocolVersion20251125)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			tb.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp
	}
	resp := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",`+
		`"capabilities":{"sampling":{},"elicitation":{"form":{},"url":{}}},"clientInfo":{"name":"bench","version":"1"}}}`)
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" {
		tb.Fatalf("initialize: %d, no session id", resp.StatusCode)
	}
	if resp := post(id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		tb.Fatalf("initialized: %d", resp.StatusCode)
	}
	return id
}
