//go:build unix

package main

import (
	"crypto/rand"
	"encoding/base64"
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
		return testenv.RoundRobin(t, a.URL, b.URL)
	})
}

// TestPostgresReplicasConformanceNextServerScenarios runs the newer
// suite's server scenarios at its default spec, as
// TestConformanceNextServerScenarios does, against two replicas behind the
// round-robin balancer: a 2026-07-28 request and its retry may reach
// either, with no session to find. The replicas share ELYSIA_SECRET_KEY,
// as an operator's must: a requestState one replica sealed is opened by
// the other.
func TestPostgresReplicasConformanceNextServerScenarios(t *testing.T) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	env := []string{"ELYSIA_SECRET_KEY=" + base64.StdEncoding.EncodeToString(key)}
	url := startConformanceEndpoint(t, func(cfg string) string {
		dsn := testenv.PostgresDSN(t)
		a := startService(t, serveOptions{Config: cfg, Env: env, Args: []string{"--db", dsn}})
		b := startService(t, serveOptions{Config: cfg, Env: env, Args: []string{"--db", dsn}})
		return testenv.RoundRobin(t, a.URL, b.URL)
	})
	// One replica's expected failures, and the one only two have.
	nextServerScenarios(t, url, nextSpec{name: "default", server: "expected-server-failures-0.2-replicas.txt"})
}
