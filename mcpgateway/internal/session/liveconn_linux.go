package session

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// peerClosed reports whether the connection's TCP state says the server
// has closed it: anything but established (CLOSE_WAIT after its end of
// stream, CLOSE after a reset). The state is read, not the bytes waiting,
// so a TLS server's close_notify alert ahead of its end of stream does not
// hide the close. It runs beside net/http's read loop, which may be
// parked reading the same socket: Control takes no read lock.
func peerClosed(raw syscall.RawConn) bool {
	closed := false
	err := raw.Control(func(fd uintptr) {
		info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
		closed = err == nil && info.State != unix.BPF_TCP_ESTABLISHED
	})
	return err == nil && closed
}
