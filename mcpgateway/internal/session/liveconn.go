package session

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http/httptrace"
	"sync/atomic"
	"syscall"
)

// errPeerClosed is a write refused before it began: the server had
// already closed the kept-alive connection.
var errPeerClosed = errors.New("the server closed the kept-alive connection before the request was written")

// liveDial wraps dial so that each connection it makes can look, as a
// request starts on it again, whether the server closed it meanwhile
// (liveConn, armed by armOnReuse).
//
// Why: a server that restarts or dies closes its idle connections, and
// net/http's pool notices only once its read loop runs. A POST sent in
// between is written into the closed connection and ends in EOF; a call
// that ended so may have run, and a write that may have run is not sent
// to another copy (mayHaveRunError). Refused before the first byte, the
// write is one net/http sends again on a new connection (its rule for a
// request with nothing written and a body it can rewind), so the call
// ends in a refused dial, which proves it was never sent.
func liveDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		sc, ok := c.(syscall.Conn)
		if !ok {
			return c, nil
		}
		raw, err := sc.SyscallConn()
		if err != nil {
			return c, nil
		}
		return &liveConn{Conn: c, raw: raw}, nil
	}
}

// liveConn is a connection whose first write after it was armed is
// refused when the server has closed it (peerClosed). It is armed only
// where a request begins on a reused connection (armOnReuse): a write in
// the middle of a request, say the rest of a body after the server
// answered early and closed its side, is never refused.
type liveConn struct {
	net.Conn
	raw   syscall.RawConn
	armed atomic.Bool
}

func (c *liveConn) Write(p []byte) (int, error) {
	if c.armed.Swap(false) && peerClosed(c.raw) {
		return 0, errPeerClosed
	}
	return c.Conn.Write(p)
}

// armOnReuse is the client trace (httptrace) that arms a liveConn as
// net/http hands it, reused, to a request, before the request is written.
// HTTP/2 is left alone: its connection carries many requests at once, and
// it does not send a request again after a refused write.
var armOnReuse = &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
	if !info.Reused {
		return
	}
	c := info.Conn
	if tc, ok := c.(*tls.Conn); ok {
		if tc.ConnectionState().NegotiatedProtocol == "h2" {
			return
		}
		c = tc.NetConn()
	}
	if lc, ok := c.(*liveConn); ok {
		lc.armed.Store(true)
	}
}}
