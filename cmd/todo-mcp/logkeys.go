package main

// Log keys this program repeats (STYLE.md §9).
const (
	logKeyTool      = "tool"
	logKeyTransport = "transport"
	logKeyErr       = "err"
)
