package llm

import (
	"net"
	"net/http"
	"time"
)

// Defaults of the HTTP client FromEnv builds; see NewHTTPClient.
const (
	defaultMaxConns              = 128
	defaultResponseHeaderTimeout = 3 * time.Minute
	dialTimeout                  = 10 * time.Second
	dialKeepAlive                = 30 * time.Second
	tlsHandshakeTimeout          = 10 * time.Second
	idleConnTimeout              = 90 * time.Second
	// writeBufferSize is each connection's write buffer: a decision's
	// request (5–30 KB) goes out from it in one piece. With Go's default
	// of 4 KB, the rest of the body was copied through a buffer of its
	// size allocated per request (net.genericReadFrom), a tenth of the
	// bytes a query allocated.
	writeBufferSize = 32 << 10
)

// NewHTTPClient returns the client a model provider's requests share: one
// keep-alive pool of up to o.MaxConns idle connections to the provider's
// host (Go's default keeps 2, so under concurrency every query beyond them
// dialled, and with HTTPS shook hands, again), HTTP/2 when the server
// offers it over TLS, a 32 KB write buffer per connection (a request is
// written from it whole), and timeouts on dialling (10 s), the TLS handshake
// (10 s) and the wait for the response's headers (o.ResponseHeaderTimeout).
// It sets no overall timeout: the tree bounds each model call with its
// context, and a streamed answer may take long. A nil o means defaults.
//
// The client is safe for concurrent use; FromEnv builds one per call, so
// one per process and provider when called once at start-up.
func NewHTTPClient(o *Options) *http.Client {
	var opts Options
	if o != nil {
		opts = *o
	}
	conns := opts.MaxConns
	if conns <= 0 {
		conns = defaultMaxConns
	}
	rht := opts.ResponseHeaderTimeout
	if rht <= 0 {
		rht = defaultResponseHeaderTimeout
	}
	d := &net.Dialer{Timeout: dialTimeout, KeepAlive: dialKeepAlive}
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          conns,
		MaxIdleConnsPerHost:   conns,
		IdleConnTimeout:       idleConnTimeout,
		TLSHandshakeTimeout:   tlsHandshakeTimeout,
		ResponseHeaderTimeout: rht,
		ExpectContinueTimeout: time.Second,
		WriteBufferSize:       writeBufferSize,
	}}
}
