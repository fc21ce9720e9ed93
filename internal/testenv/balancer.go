package testenv

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
)

// maxBalancedBody is the largest request body the balancer buffers.
const maxBalancedBody = 16 << 20

// RoundRobin starts a load balancer on loopback without sticky sessions:
// each request goes to the next of targets (base URLs) in turn, with its
// Host kept and its answer streamed as it comes. It returns the
// balancer's base URL and stops it when tb ends.
//
// Like nginx's default, it reads a request's body whole before it sends
// the request on. Streaming it would race: a replica that answers as soon
// as it has read Content-Length bytes gets its answer relayed while the
// proxy's transport is still reading the client's body for its end; the
// relay's headers close that body (net/http discards an unread request
// body once the response starts), the transport's write fails and closes
// the connection under the answer's own body, and the client sees a
// response cut off after its headers.
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
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(to[(n.Add(1)-1)%uint64(len(to))])
		pr.Out.Host = pr.In.Host
	}, FlushInterval: -1}
	lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBalancedBody))
			if err != nil {
				http.Error(w, "balancer: read request body: "+err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		proxy.ServeHTTP(w, r)
	}))
	tb.Cleanup(lb.Close)
	return lb.URL
}
