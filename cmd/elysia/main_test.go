package main

import (
	"fmt"
	"os"
	"testing"
)

// TestMain gives the commands the tests run a data folder of their own
// (cleanEnv's XDG_DATA_HOME), removed at the end.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "elysia-test-data-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testDataRoot = dir
	code := m.Run()
	_ = os.RemoveAll(dir) // a temporary folder: nothing to report
	os.Exit(code)
}
