package main

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"unsafe"
)

// openPTY opens a pseudo-terminal: the master the test reads, and the
// slave a child process gets as its terminal. Both are closed when the
// test ends.
func openPTY(tb testing.TB) (master, slave *os.File) {
	tb.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		tb.Skipf("no pseudo-terminal: %v", err)
	}
	tb.Cleanup(func() { _ = master.Close() })
	var unlock int32
	if err := ioctl(master, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		tb.Fatalf("unlock the pty: %v", err)
	}
	var n uint32
	if err := ioctl(master, syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		tb.Fatalf("the pty's number: %v", err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = slave.Close() })
	return master, slave
}

func ioctl(f *os.File, req uint, arg unsafe.Pointer) error {
	raw, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	if err := raw.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, uintptr(req), uintptr(arg))
	}); err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}
