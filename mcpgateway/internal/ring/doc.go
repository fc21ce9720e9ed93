// Package ring keeps the newest of what a server sends without bound on
// its side: [Buffer] holds the last n values (a server's log messages),
// [Stderr] the last lines a stdio child wrote to stderr, masked and cut,
// read from the pipe in a fixed buffer however long a line is. Both are
// safe for concurrent use. It imports only the standard library.
package ring
