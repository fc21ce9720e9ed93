package testenv

import (
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
)

// RoundRobin starts a load balancer on loopback without sticky sessions:
// each request goes to the next of targets (base URLs) in turn, with its
// Host kept and its answer streamed as it comes. It returns the
// balancer's base URL and stops it when tb ends.
func RoundRobin(tb testing.TB, targets ...string) string {
	tb.Helper()
	to := make([]*url.URL, len(targets))
	for i, s := range targets {
		u, err := url.Parse(s)
		if err != nil {
			tb.Fatalf("balancer target %q: %v", s, err)
		}
		to[i] = u
	}
	var n atomic.Uint64
	lb := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(to[(n.Add(1)-1)%uint64(len(to))])
		pr.Out.Host = pr.In.Host
	}, FlushInterval: -1})
	tb.Cleanup(lb.Close)
	return lb.URL
}
