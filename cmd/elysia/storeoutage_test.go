package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
)

// dbProxy forwards TCP connections to a database until stopped; then its
// port refuses connections and every forwarded one is cut, as when the
// database stops.
type dbProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	wg     sync.WaitGroup
	once   sync.Once
}

func startDBProxy(t *testing.T, target string) *dbProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dbProxy{ln: ln, target: target}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.DialTimeout("tcp", target, 5*time.Second)
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
	})
	t.Cleanup(p.stop)
	return p
}

// stop closes the port and every connection.
func (p *dbProxy) stop() {
	p.once.Do(func() {
		_ = p.ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
	})
	p.wg.Wait()
}

// TestPostgresOutage stops the PostgreSQL under a service while a query
// runs: the answer cannot be saved, so the query ends with an error event
// and no completed; the next query is a 503 with a plain message (not 409
// "busy", not the driver's text naming the database's user, host and
// port); /readyz says not ready.
func TestPostgresOutage(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	realHost := u.Host
	p := startDBProxy(t, realHost)
	u.Host = p.ln.Addr().String()
	hold := make(chan struct{})
	llm := newFakeLLM(t, reply{Tool: "text_response", Args: `{"text": "An answer that is never saved."}`, Hold: hold})
	s := startService(t, serveOptions{Env: llm.Env(), Args: []string{"--db", u.String()}})

	got := make(chan sseResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		got <- querySSE(t, ctx, s.URL, "", "alice", "c1", "a question")
	}()
	testenv.WaitFor(t, 30*time.Second, "the query waiting for the model", func() bool { return llm.Waiting() == 1 })
	p.stop()
	close(hold)
	res := <-got
	if res.Status != http.StatusOK {
		t.Fatalf("POST /query: %d %v", res.Status, res.Body)
	}
	evTypes := types(res.Events)
	if len(res.Events) == 0 || res.Events[len(res.Events)-1].Type != "error" {
		t.Errorf("a query whose answer was not saved ended with %v, want an error event", evTypes)
	}
	for _, e := range res.Events {
		if e.Type == "completed" {
			t.Errorf("a query whose answer was not saved was completed: %v", evTypes)
		}
	}

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	res = querySSE(t, ctx, s.URL, "", "alice", "c1", "another question")
	if res.Status != http.StatusServiceUnavailable {
		t.Errorf("query with the database stopped: %d %v, want 503", res.Status, res.Body)
	}
	msg, _ := res.Body["error"].(string)
	if !strings.HasPrefix(msg, "the database is unavailable; try again shortly") {
		t.Errorf("query with the database stopped: error %q, want the database is unavailable", msg)
	}
	host, port, _ := net.SplitHostPort(p.ln.Addr().String())
	for _, secret := range []string{"elysia", "user=", host + ":" + port, port} {
		if strings.Contains(msg, secret) {
			t.Errorf("error %q shows %q", msg, secret)
		}
	}
	if out := s.Output(); !strings.Contains(out, port) {
		t.Errorf("the log does not have the detail (port %s):\n%s", port, out)
	}

	start := time.Now()
	code, body := do(t, http.MethodGet, s.URL+"/readyz", "", nil)
	if code != http.StatusServiceUnavailable {
		t.Errorf("/readyz with the database stopped: %d %v, want 503", code, body)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("/readyz took %v", d)
	}
}
