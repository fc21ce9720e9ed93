package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/internal/testenv"
)

// landings counts the requests a client sends and the session ids its
// answers carry.
type landings struct {
	mu       sync.Mutex
	calls    int
	sessions []string
}

func (l *landings) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	if r.Header.Get(mcp.HeaderMethod) == "tools/call" {
		l.calls++
	}
	l.mu.Unlock()
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && resp.Header.Get("Mcp-Session-Id") != "" {
		l.mu.Lock()
		l.sessions = append(l.sessions, resp.Header.Get("Mcp-Session-Id"))
		l.mu.Unlock()
	}
	return resp, err
}

// TestPostgresReplicasServeModernStatelessly: two replicas on one
// PostgreSQL database, sharing ELYSIA_SECRET_KEY, behind a balancer that
// alternates between them, answer a 2026-07-28 client (mcp-go's default)
// with no session: its calls land on either, server-everything's question
// reaches it as input_required and its retry, on the other replica, goes
// on with the call held by the first; no session id is given and no row
// is written to mcp_sessions.
func TestPostgresReplicasServeModernStatelessly(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	env := []string{"ELYSIA_SECRET_KEY=" + base64.StdEncoding.EncodeToString(key)}
	cfg := `{"expose": {"mode": "tools"}, "servers": {` + todoServer(t, "todo", "") + `, ` +
		everythingServer(t, `, "elicitation_timeout": 20`) + `}}`
	a := startService(t, serveOptions{Config: cfg, Env: env, Args: []string{"--db", dsn}})
	b := startService(t, serveOptions{Config: cfg, Env: env, Args: []string{"--db", dsn}})
	lb := testenv.RoundRobin(t, a.URL, b.URL)

	wire := &landings{}
	tr, err := mcptransport.NewStreamableHTTP(lb+"/mcp", mcptransport.WithHTTPBasicClient(&http.Client{Transport: wire}))
	if err != nil {
		t.Fatal(err)
	}
	c := mcpclient.NewClient(tr, mcpclient.WithElicitationHandler(elicitFunc(
		func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
			return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
				Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"name": "Ada Lovelace"}}}, nil
		})))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	res, err := c.Initialize(ctx, mcp.InitializeRequest{})
	if err != nil || res.ProtocolVersion != mcp.ProtocolVersion20260728 {
		t.Fatalf("initialize: %v, %+v; want 2026-07-28", err, res)
	}
	if names := strings.Join(toolNames(t, c), " "); !strings.Contains(names, "todo__create_todo") || !strings.Contains(names, "everything__trigger-elicitation-request") {
		t.Fatalf("tools/list: %s", names)
	}
	for i := range 4 { // two on each replica
		if text, isErr := callText(t, c, "todo__create_todo", map[string]any{"title": "stateless"}); isErr {
			t.Errorf("call %d: %s", i, text)
		}
	}
	for i := range 2 { // the question on one replica, the answer on the other
		before := wire.calls
		text, isErr := callText(t, c, "everything__trigger-elicitation-request", nil)
		if isErr || !strings.Contains(text, "Ada Lovelace") {
			t.Errorf("elicitation %d: %q (error %v), want the client's answer", i, text, isErr)
		}
		if n := wire.calls - before; n != 2 {
			t.Errorf("elicitation %d took %d tools/call requests, want 2 (the call and its retry)", i, n)
		}
	}
	if len(wire.sessions) != 0 {
		t.Errorf("answers gave session ids %q, want none", wire.sessions)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	var rows int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM mcp_sessions`).Scan(&rows); err != nil || rows != 0 {
		t.Errorf("mcp_sessions holds %d rows (%v), want none", rows, err)
	}
}

// BenchmarkMCPEndpointCallModern measures a 2026-07-28 tools/call through
// `elysia serve`'s /mcp against the same call on a 2025-11-25 session, and
// against calling the server directly (as BenchmarkMCPEndpointCall), one
// after the other so that all see the same load. It reports the medians:
//
//	go test -run '^$' -bench BenchmarkMCPEndpointCallModern -benchtime 2000x ./cmd/elysia/
func BenchmarkMCPEndpointCallModern(b *testing.B) {
	up := mcpserver.NewMCPServer("echo", "1")
	up.AddTool(mcp.NewTool("echo", mcp.WithString("message")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(req.GetString("message", "")), nil
	})
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(up, mcpserver.WithDisableLocalhostProtection(true)))
	b.Cleanup(hs.Close)
	s := startService(b, serveOptions{Config: fmt.Sprintf(`{"servers": {"echo": {"type": "http", "url": %q}}}`, hs.URL+"/mcp"),
		Args: append([]string{"--log-level", "warn"}, benchProfileArgs()...)})
	connect := func(url, version string) *mcpclient.Client {
		c, err := mcpclient.NewStreamableHttpClient(url)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Start(b.Context()); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Close() })
		req := mcp.InitializeRequest{}
		req.Params.ProtocolVersion = version
		res, err := c.Initialize(b.Context(), req)
		if err != nil || (version != "" && res.ProtocolVersion != version) {
			b.Fatalf("initialize %s: %v %+v", url, err, res)
		}
		return c
	}
	direct := connect(hs.URL+"/mcp", mcp.ProtocolVersion20251125)
	old, modern := connect(s.URL+"/mcp", mcp.ProtocolVersion20251125), connect(s.URL+"/mcp", mcp.ProtocolVersion20260728)
	callOnce := func(c *mcpclient.Client, name string) time.Duration {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, map[string]any{"message": "hello"}
		start := time.Now()
		res, err := c.CallTool(b.Context(), req)
		d := time.Since(start)
		if err != nil || res.IsError {
			b.Fatalf("call %s: %v %+v", name, err, res)
		}
		return d
	}
	for range 50 { // warm up
		callOnce(direct, "echo")
		callOnce(old, "echo__echo")
		callOnce(modern, "echo__echo")
	}
	var ds, ls, ms []time.Duration
	b.ResetTimer()
	for b.Loop() {
		ds = append(ds, callOnce(direct, "echo"))
		ls = append(ls, callOnce(old, "echo__echo"))
		ms = append(ms, callOnce(modern, "echo__echo"))
	}
	b.StopTimer()
	median := func(x []time.Duration) time.Duration { slices.Sort(x); return x[len(x)/2] }
	md, mo, mm := median(ds), median(ls), median(ms)
	b.ReportMetric(float64(md.Microseconds()), "direct-median-µs")
	b.ReportMetric(float64(mo.Microseconds()), "2025-11-25-median-µs")
	b.ReportMetric(float64(mm.Microseconds()), "2026-07-28-median-µs")
	b.ReportMetric(float64((mm - mo).Microseconds()), "2026-over-2025-median-µs")
}
