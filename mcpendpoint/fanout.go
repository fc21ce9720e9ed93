package mcpendpoint

import (
	"context"
	"sync"
)

// maxFanOut bounds how many servers one listing asks at once.
const maxFanOut = 8

// eachServer calls f(lctx, i) for every i in [0, n), at most maxFanOut at
// a time, each lctx bounded by the list timeout, and returns when all have
// returned. f writes its result to index i of a slice of the caller's.
func (e *Endpoint) eachServer(ctx context.Context, n int, f func(lctx context.Context, i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxFanOut)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			lctx, cancel := context.WithTimeout(ctx, e.opts.ListTimeout)
			defer cancel()
			f(lctx, i)
		})
	}
	wg.Wait()
}
