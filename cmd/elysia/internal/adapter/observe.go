package adapter

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/elysia-go/elysia/discovery"
	"github.com/elysia-go/elysia/mcpgateway"
)

// NewGatewayMetrics returns the gateways' Observer, which counts their
// calls by server and status, and their latency, into reg (metrics.go).
func NewGatewayMetrics(reg prometheus.Registerer) mcpgateway.Observer { return newGatewayMetrics(reg) }

// NewGatewayCollector returns the collector that reports, at scrape time,
// each of d's servers' session, child process, state and circuit state
// (metrics.go).
func NewGatewayCollector(d *discovery.Discovery) prometheus.Collector { return newGatewayCollector(d) }
