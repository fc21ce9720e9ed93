package session

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// getStreamServer is a Streamable HTTP server at 2025-11-25 whose GET
// stream is held by hold before it is served; served reports whether a GET
// got past hold.
func getStreamServer(t *testing.T, hold func(r *http.Request)) (cfg mcpconfig.ServerConfig, served *atomic.Bool) {
	t.Helper()
	srv := mcpserver.NewMCPServer("slow-get", "1", mcpserver.WithToolCapabilities(true))
	h := mcpserver.NewStreamableHTTPServer(srv, mcpserver.WithDisableLocalhostProtection(true))
	served = &atomic.Bool{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			hold(r)
			served.Store(true)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return mcpconfig.ServerConfig{Name: "slow-get", Transport: mcpconfig.TransportHTTP, URL: hs.URL + "/mcp", Enabled: true,
		ProtocolVersion: "2025-11-25", ConnectTimeout: 30 * time.Second, CallTimeout: 10 * time.Second}, served
}

// TestConnectWaitsForGetStream: a connect to a Streamable HTTP server
// before 2026-07-28 returns once the standalone GET stream has its answer.
// A server may drop what it sends while the stream is not open (the
// TypeScript SDK's does), so a call made at once could wait out its
// call_timeout for a question that never comes.
func TestConnectWaitsForGetStream(t *testing.T) {
	cfg, served := getStreamServer(t, func(*http.Request) { time.Sleep(200 * time.Millisecond) })
	c := New(cfg, testOptions(), slog.New(slog.DiscardHandler), func(s string) string { return s })
	defer c.Close()
	if _, err := c.Session(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !served.Load() {
		t.Error("the connect returned before the server answered the GET stream")
	}
	if c.getHeld.Load() {
		t.Error("the connect waited out getStreamWait: the GET's answer was not seen")
	}
}

// TestConnectGetStreamWaitBounded: a server that holds the GET's headers
// back (until it has something to send) delays a connect by at most
// getStreamWait, not its connect_timeout.
func TestConnectGetStreamWaitBounded(t *testing.T) {
	cfg, _ := getStreamServer(t, func(r *http.Request) { <-r.Context().Done() })
	c := New(cfg, testOptions(), slog.New(slog.DiscardHandler), func(s string) string { return s })
	defer c.Close()
	start := time.Now()
	if _, err := c.Session(t.Context()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > getStreamWait+3*time.Second {
		t.Errorf("the connect took %s with the GET stream held, want about getStreamWait (%s)", took, getStreamWait)
	}
	if !c.getHeld.Load() {
		t.Error("the conn does not remember that the server holds the GET's headers; every connect would wait")
	}
}

// TestStandaloneGetWatch: the GET that opens the standalone stream counts
// once it has its answer, failed or not; a GET resuming a POST's stream
// (Last-Event-ID) and other methods do not.
func TestStandaloneGetWatch(t *testing.T) {
	for _, tc := range []struct {
		method, lastEventID string
		fail                bool
		want                bool
	}{
		{http.MethodGet, "", false, true},
		{http.MethodGet, "", true, true},
		{http.MethodGet, "ev-3", false, false},
		{http.MethodPost, "", false, false},
		{http.MethodDelete, "", false, false},
	} {
		answered := false
		w := standaloneGetWatch{base: roundTripFunc(func(*http.Request) (*http.Response, error) {
			if tc.fail {
				return nil, errors.New("connection refused")
			}
			return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
		}), answered: func() { answered = true }}
		r := httptest.NewRequest(tc.method, "http://127.0.0.1/mcp", nil)
		if tc.lastEventID != "" {
			r.Header.Set("Last-Event-ID", tc.lastEventID)
		}
		if resp, err := w.RoundTrip(r); err == nil {
			_ = resp.Body.Close()
		}
		if answered != tc.want {
			t.Errorf("%s (Last-Event-ID %q, failed %t): answered = %t, want %t", tc.method, tc.lastEventID, tc.fail, answered, tc.want)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
