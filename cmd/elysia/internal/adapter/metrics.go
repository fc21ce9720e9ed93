package adapter

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/elysia-go/elysia/discovery"
	"github.com/elysia-go/elysia/mcpgateway"
)

// gatewayMetrics turns the gateways' observations into Prometheus metrics:
// calls by server and status, and their latency. It implements
// mcpgateway.Observer; its methods touch only Prometheus' own
// goroutine-safe values and the series kept under a read-mostly lock
// (mu), so they never wait on I/O. Circuit state is not
// observed here but read at scrape time (gatewayCollector), so every
// configured server has a series from the start and a removed one none.
type gatewayMetrics struct {
	calls    *prometheus.CounterVec
	failures *prometheus.CounterVec
	latency  *prometheus.HistogramVec

	// series keeps each server and status's series, found once: a
	// lookup by label values hashes them under the vector's lock, on
	// every call. Servers and statuses are few, and series are never
	// deleted.
	mu     sync.RWMutex
	series map[callKey]callSeries
}

type callKey struct{ server, status string }

// callSeries are the series one call of a server with a status counts
// in; failures is nil for a success.
type callSeries struct {
	calls, failures prometheus.Counter
	latency         prometheus.Observer
}

var _ mcpgateway.Observer = (*gatewayMetrics)(nil)

// circuitValue encodes a circuit state as a gauge value.
var circuitValue = map[string]float64{
	mcpgateway.CircuitClosed:   0,
	mcpgateway.CircuitHalfOpen: 1,
	mcpgateway.CircuitOpen:     2,
}

func newGatewayMetrics(reg prometheus.Registerer) *gatewayMetrics {
	m := &gatewayMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "elysia_mcp_tool_calls_total",
			Help: "MCP tool calls (execute) by server and status: success, failure or timeout.",
		}, []string{"server", "status"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "elysia_mcp_tool_call_failures_total",
			Help: "MCP tool calls that failed or timed out, by server.",
		}, []string{"server"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "elysia_mcp_tool_call_duration_seconds",
			Help:    "Duration of MCP tool calls, by server.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"server"}),
	}
	reg.MustRegister(m.calls, m.failures, m.latency)
	m.series = map[callKey]callSeries{}
	return m
}

// ObserveCall counts one execute.
func (m *gatewayMetrics) ObserveCall(server, _ string, status string, d time.Duration) {
	s := m.seriesOf(callKey{server, status})
	s.calls.Inc()
	if s.failures != nil {
		s.failures.Inc()
	}
	s.latency.Observe(d.Seconds())
}

// seriesOf returns k's series, made on first use.
func (m *gatewayMetrics) seriesOf(k callKey) callSeries {
	m.mu.RLock()
	s, ok := m.series[k]
	m.mu.RUnlock()
	if ok {
		return s
	}
	s = callSeries{calls: m.calls.WithLabelValues(k.server, k.status), latency: m.latency.WithLabelValues(k.server)}
	if k.status != mcpgateway.CallSuccess {
		s.failures = m.failures.WithLabelValues(k.server)
	}
	m.mu.Lock()
	m.series[k] = s
	m.mu.Unlock()
	return s
}

// ObserveCircuit does nothing: gatewayCollector reads the circuit state of
// every configured server at scrape time.
func (m *gatewayMetrics) ObserveCircuit(string, string) {}

// gatewayCollector reports, at scrape time, each configured server's live
// sessions and child processes (its users' included), users' sessions,
// state and circuit state, read from the gateways' status snapshots.
type gatewayCollector struct {
	disc      *discovery.Discovery
	sessions  *prometheus.Desc
	children  *prometheus.Desc
	users     *prometheus.Desc
	usersBusy *prometheus.Desc
	state     *prometheus.Desc
	circuit   *prometheus.Desc
	// The copies of a server with copies, by server and copy.
	copyServing  *prometheus.Desc
	copyDown     *prometheus.Desc
	copyCircuit  *prometheus.Desc
	copyCalls    *prometheus.Desc
	copyFailures *prometheus.Desc
}

func newGatewayCollector(d *discovery.Discovery) *gatewayCollector {
	return &gatewayCollector{
		disc:     d,
		sessions: prometheus.NewDesc("elysia_mcp_sessions", "Live MCP sessions by server: the shared one and every user's.", []string{"server"}, nil),
		children: prometheus.NewDesc("elysia_mcp_child_processes", "Running stdio child processes by server, every user's included.", []string{"server"}, nil),
		users: prometheus.NewDesc("elysia_mcp_user_sessions", "Users' sessions open by per-user server (at most its max users).",
			[]string{"server"}, nil),
		usersBusy: prometheus.NewDesc("elysia_mcp_user_sessions_busy", "Users' sessions with a call in flight, by per-user server.",
			[]string{"server"}, nil),
		state:   prometheus.NewDesc("elysia_mcp_server_state", "1 for the state each configured server is in.", []string{"server", "state"}, nil),
		circuit: prometheus.NewDesc("elysia_mcp_circuit_state", "Circuit breaker state by server: 0 closed, 1 half-open, 2 open.", []string{"server"}, nil),
		copyServing: prometheus.NewDesc("elysia_mcp_copy_serving", "1 for each copy of a server with copies that takes calls now.",
			[]string{"server", "copy"}, nil),
		copyDown: prometheus.NewDesc("elysia_mcp_copy_down", "1 for each copy of a server with copies that calls fail over from.",
			[]string{"server", "copy"}, nil),
		copyCircuit: prometheus.NewDesc("elysia_mcp_copy_circuit_state", "Circuit breaker state by server and copy: 0 closed, 1 half-open, 2 open.",
			[]string{"server", "copy"}, nil),
		copyCalls: prometheus.NewDesc("elysia_mcp_copy_calls_total", "Calls sent to each copy of a server with copies.",
			[]string{"server", "copy"}, nil),
		copyFailures: prometheus.NewDesc("elysia_mcp_copy_failures_total", "Calls that failed on each copy of a server with copies.",
			[]string{"server", "copy"}, nil),
	}
}

func (c *gatewayCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.sessions
	ch <- c.children
	ch <- c.users
	ch <- c.usersBusy
	ch <- c.state
	ch <- c.circuit
	ch <- c.copyServing
	ch <- c.copyDown
	ch <- c.copyCircuit
	ch <- c.copyCalls
	ch <- c.copyFailures
}

func (c *gatewayCollector) Collect(ch chan<- prometheus.Metric) {
	for _, g := range c.disc.Gateways() {
		st := g.Status()
		n := g.Sessions()
		ch <- prometheus.MustNewConstMetric(c.sessions, prometheus.GaugeValue, float64(n.Live), st.Name)
		ch <- prometheus.MustNewConstMetric(c.children, prometheus.GaugeValue, float64(n.Processes), st.Name)
		ch <- prometheus.MustNewConstMetric(c.users, prometheus.GaugeValue, float64(n.Users), st.Name)
		ch <- prometheus.MustNewConstMetric(c.usersBusy, prometheus.GaugeValue, float64(n.BusyUsers), st.Name)
		ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, 1, st.Name, string(st.State))
		ch <- prometheus.MustNewConstMetric(c.circuit, prometheus.GaugeValue, circuitValue[st.Circuit.State], st.Name)
		for _, cp := range st.Copies {
			label := strconv.Itoa(cp.Copy)
			ch <- prometheus.MustNewConstMetric(c.copyServing, prometheus.GaugeValue, boolValue(cp.Serving), st.Name, label)
			ch <- prometheus.MustNewConstMetric(c.copyDown, prometheus.GaugeValue, boolValue(cp.Down), st.Name, label)
			ch <- prometheus.MustNewConstMetric(c.copyCircuit, prometheus.GaugeValue, circuitValue[cp.Circuit.State], st.Name, label)
			ch <- prometheus.MustNewConstMetric(c.copyCalls, prometheus.CounterValue, float64(cp.Calls), st.Name, label)
			ch <- prometheus.MustNewConstMetric(c.copyFailures, prometheus.CounterValue, float64(cp.Failures), st.Name, label)
		}
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
