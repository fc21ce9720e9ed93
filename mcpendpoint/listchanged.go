package mcpendpoint

import (
	"crypto/sha256"
	"fmt"
)

// ListsChanger is an Upstream that counts its server's
// notifications/resources/list_changed and prompts/list_changed;
// *mcpgateway.Gateway is one. The Source's Notify fires when the count
// moves.
type ListsChanger interface {
	ListsChanged() uint64
}

// listsMoved reports whether a server said its resources or prompts
// changed since the last call (the first call sets the baseline).
func (e *Endpoint) listsMoved() bool {
	h := sha256.New()
	for _, up := range e.src.Upstreams() {
		if lc, ok := up.(ListsChanger); ok {
			_, _ = fmt.Fprintf(h, "%q %d\x00", up.Config().Name, lc.ListsChanged()) // a hash never fails a write
		}
	}
	var sum [32]byte
	h.Sum(sum[:0])
	e.mu.Lock()
	defer e.mu.Unlock()
	moved := sum != e.listsFP
	e.listsFP = sum
	return moved
}
