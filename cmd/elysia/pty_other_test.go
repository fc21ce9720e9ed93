//go:build !linux

package main

import (
	"os"
	"testing"
)

// openPTY skips: the tests open a pseudo-terminal on Linux only.
func openPTY(tb testing.TB) (master, slave *os.File) {
	tb.Helper()
	tb.Skip("pseudo-terminals are opened on Linux only")
	return nil, nil
}
