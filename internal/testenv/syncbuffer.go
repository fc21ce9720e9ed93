package testenv

import (
	"bytes"
	"sync"
)

// SyncBuffer is a buffer safe for concurrent writes, as a logger's or a
// child process's output needs. Limit, when positive, bounds what it keeps:
// writes past it are dropped (and reported written). The zero value is
// ready to use.
type SyncBuffer struct {
	Limit int

	// mu guards buf.
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write implements io.Writer.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Limit > 0 && b.buf.Len() > b.Limit {
		return len(p), nil
	}
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
