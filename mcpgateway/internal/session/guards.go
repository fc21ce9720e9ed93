package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"

	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
)

// The guards in this file bound what mcp-go's transports leave unbounded, so
// that every wait on a server ends within the configured timeouts (issue 8,
// "Hangs"; the black-hole tests show each case).

// newHTTPClient returns the session's client: its own pool, redirects
// within the server's origin only (ServerRedirects), and every
// request ended by s.abort (which close calls after CloseGrace) whatever ctx
// mcp-go gave it: its DELETE on close has context.Background and 5 s. Its
// connections refuse a request the server closed them under (liveDial).
//
// Outside that, the auth layer puts the configured headers and the user's
// token on every request (see mcpauth.NewRoundTripper).
func (c *Conn) newHTTPClient(s *Session) *http.Client {
	ctx, abort := context.WithCancel(context.Background())
	s.abort = abort
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = liveDial(tr.DialContext)
	base := &abortRoundTripper{ctx: ctx, base: tr, line: s.orders.line}
	rt := mcpauth.NewRoundTripper(base, c.cfg, c.auth)
	// The trace context goes to the server as traceparent (see trace.go).
	// The standalone GET is watched outside the auth layer, so that a GET
	// it sends again (a refreshed token, a new DPoP nonce) counts once, with
	// its last answer.
	return &http.Client{Transport: traceRoundTripper{standaloneGetWatch{base: rt, answered: s.markGetAnswered}}, CheckRedirect: mcpauth.ServerRedirects(c.cfg.Name)}
}

// standaloneGetWatch calls answered once a GET that opens the standalone
// stream (awaitGetStream) has its answer, or failed. A GET with
// Last-Event-ID resumes a POST's stream instead, which mcp-go sends for a
// server that ended one early: it does not count.
type standaloneGetWatch struct {
	base     http.RoundTripper
	answered func()
}

func (t standaloneGetWatch) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") == "" {
		t.answered()
	}
	return resp, err
}

type abortRoundTripper struct {
	ctx  context.Context //nolint:containedctx // the session's abort signal
	base *http.Transport
	line func([]byte) // sees each line of a response body (fieldorder.go)
}

func (t *abortRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(httptrace.WithClientTrace(r.Context(), armOnReuse))
	stop := context.AfterFunc(t.ctx, cancel)
	resp, err := t.base.RoundTrip(r.WithContext(ctx))
	if err != nil {
		stop()
		cancel()
		return nil, err
	}
	body := resp.Body
	if t.line != nil {
		body = sniffedBody{Reader: &lineSniffer{r: body, line: t.line}, Closer: body}
	}
	resp.Body = &releaseBody{ReadCloser: body, release: func() { stop(); cancel() }}
	return resp, nil
}

func (t *abortRoundTripper) CloseIdleConnections() { t.base.CloseIdleConnections() }

type releaseBody struct {
	io.ReadCloser
	release func()
}

func (b *releaseBody) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}

// sseTransport is mcp-go's SSE transport with two answers fixed. sse.go:671-676
// returns (nil, nil) when a request's deadline has passed but its ctx is not
// cancelled yet, which makes mcp-go's client (client.go:284) and listRaw
// dereference nil. And its response timer, set to the deadline, may fire
// before the ctx's: "timeout waiting for SSE response" then hides the timeout
// from errors.Is.
type sseTransport struct {
	*mcptransport.SSE
	hist *history // where its requests are kept
}

func (t sseTransport) SendRequest(ctx context.Context, req mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
	return t.hist.send(ctx, req, t.send)
}

func (t sseTransport) send(ctx context.Context, req mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
	resp, err := t.SSE.SendRequest(ctx, req)
	switch {
	case resp == nil && err == nil:
		err = fmt.Errorf("%s: no answer before the deadline: %w", req.Method, context.DeadlineExceeded)
	case err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled):
		if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
			err = fmt.Errorf("%w (%w)", err, context.DeadlineExceeded)
		}
	}
	return resp, err
}

// wedgeGrace is how long a request may outlive its ctx before the session
// is declared wedged.
const wedgeGrace = 100 * time.Millisecond

// WedgeGuard marks s dead when a request is still running wedgeGrace after
// its ctx ended. mcp-go's stdio transport writes a request to the child's
// stdin without looking at ctx (stdio.go:648-649); to a child that stopped
// reading, a request larger than what the pipe still holds blocks there, and
// only closing stdin, which closing the session does, releases it. Call the
// returned func once the request returned.
func (s *Session) WedgeGuard(ctx context.Context, what string) (stop func()) {
	if s.proc == nil {
		return func() {}
	}
	w := &wedgeWatch{s: s, ctx: ctx, what: what}
	w.stopCtx = context.AfterFunc(ctx, w.ctxDone)
	return w.stop
}

// wedgeWatch is one WedgeGuard: a single value, as a guard runs on every
// call.
type wedgeWatch struct {
	s       *Session
	ctx     context.Context //nolint:containedctx // the request's, read for its cause
	what    string
	stopCtx func() bool

	mu      sync.Mutex // guards stopped and timer
	stopped bool
	timer   *time.Timer
}

// ctxDone starts the grace the request has to return.
func (w *wedgeWatch) ctxDone() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.timer = time.AfterFunc(wedgeGrace, w.wedged)
	}
}

func (w *wedgeWatch) wedged() {
	w.s.MarkDead(fmt.Errorf("%s: the child does not read its stdin: %w", w.what, context.Cause(w.ctx)))
}

// stop ends the watch: the request returned.
func (w *wedgeWatch) stop() {
	w.stopCtx()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
	}
}
