package session

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"syscall"
)

// errPeerClosed is a write refused before it began: the server had
// already closed the kept-alive connection.
var errPeerClosed = errors.New("the server closed the kept-alive connection before the request was written")

// liveDial wraps dial so that each connection it makes looks, before it
// writes a request after having read an answer, whether the server closed
// it meanwhile (liveConn).
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

// liveConn is a connection that refuses a write following a read when
// the server has closed it (peerClosed). Only the first write after a read
// asks: that is where a request on a reused connection begins, and a long
// body written in parts is not asked about again.
type liveConn struct {
	net.Conn
	raw  syscall.RawConn
	read atomic.Bool // something was read since the last write
}

func (c *liveConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.read.Store(true)
	}
	return n, err
}

func (c *liveConn) Write(p []byte) (int, error) {
	if c.read.Swap(false) && peerClosed(c.raw) {
		return 0, errPeerClosed
	}
	return c.Conn.Write(p)
}

// peerClosed reports whether the socket has the server's end of stream
// (or a reset) waiting: a peek that neither waits nor takes anything,
// beside net/http's read loop, which may be parked reading the same
// socket. Bytes waiting, or nothing yet, say the connection is open.
func peerClosed(raw syscall.RawConn) bool {
	closed := false
	err := raw.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = (n == 0 && err == nil) || errors.Is(err, syscall.ECONNRESET)
	})
	return err == nil && closed
}
