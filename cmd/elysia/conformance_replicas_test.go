//go:build unix

package main

import (
	"net/http/httptest"
	"net/http/httputil"
	"sync/atomic"
	"testing"

	"github.com/elysia-go/elysia/internal/testenv"
)

// TestPostgresReplicasConformanceServerScenarios runs the conformance
// suite's server scenarios as TestConformanceServerScenarios does, but
// against two replicas on one PostgreSQL database behind a load balancer
// that sends each request to the other replica than the last (no sticky
// sessions): every MCP session, GET stream, server request and client
// answer may land anywhere, and the results must be the same.
func TestPostgresReplicasConformanceServerScenarios(t *testing.T) {
	serverScenarios(t, func(cfg string) string {
		dsn := testenv.PostgresDSN(t)
		a := startService(t, serveOptions{Config: cfg, Args: []string{"--db", dsn}})
		b := startService(t, serveOptions{Config: cfg, Args: []string{"--db", dsn}})
		urls := [2]string{a.URL, b.URL}
		var n atomic.Int64
		lb := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(mustURL(t, urls[n.Add(1)%2]))
			pr.Out.Host = pr.In.Host
		}, FlushInterval: -1})
		t.Cleanup(lb.Close)
		return lb.URL
	})
}
