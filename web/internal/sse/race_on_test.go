//go:build race

package sse

// raceEnabled: the race detector makes sync.Pool drop a share of what is
// put back, at random, so allocation counts that rely on a pool vary.
const raceEnabled = true
