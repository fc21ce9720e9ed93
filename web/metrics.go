package web

import (
	"errors"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// httpMetrics are the request metrics of the API, registered on the
// registry given in Options (never the global one).
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "elysia",
			Subsystem: "http",
			Name:      "requests_total",
			Help:      "HTTP requests served, by route, method and status code.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "elysia",
			Subsystem: "http",
			Name:      "request_duration_seconds",
			Help:      "Time to serve an HTTP request, by route, method and status code; streams count until they end.",
			Buckets:   prometheus.DefBuckets,
		}, []string{"route", "method", "status"}),
	}
	m.requests = register(reg, m.requests)
	m.duration = register(reg, m.duration)
	return m
}

// register registers c, or returns the collector already registered under
// its name, so that two servers can share one registry.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic("web: register metrics: " + err.Error()) // a name clash is a programming error
	}
	return c
}

// middleware observes every request once it is served.
func (m *httpMetrics) middleware(c *gin.Context) {
	start := time.Now()
	c.Next()
	// By value, in the order the vectors name their labels: no map of
	// labels built and hashed per request.
	route, method, status := routeOf(c), c.Request.Method, strconv.Itoa(c.Writer.Status())
	m.requests.WithLabelValues(route, method, status).Inc()
	m.duration.WithLabelValues(route, method, status).Observe(time.Since(start).Seconds())
}

// metricsHandler serves the registry in the Prometheus text format.
func metricsHandler(g prometheus.Gatherer) gin.HandlerFunc {
	h := promhttp.HandlerFor(g, promhttp.HandlerOpts{})
	return gin.WrapH(h)
}
