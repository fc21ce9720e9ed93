//go:build unix && !linux

package session

import (
	"errors"
	"syscall"
)

// peerClosed reports whether the socket has the server's end of stream
// (or a reset) waiting: a peek that neither waits nor takes anything,
// beside net/http's read loop, which may be parked reading the same
// socket. Bytes waiting, or nothing yet, say the connection is open, so
// a TLS server's close_notify alert ahead of its end of stream hides the
// close here (Linux reads the TCP state instead).
func peerClosed(raw syscall.RawConn) bool {
	closed := false
	err := raw.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = (n == 0 && err == nil) || errors.Is(err, syscall.ECONNRESET)
	})
	return err == nil && closed
}
