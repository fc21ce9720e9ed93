package mcpendpoint

import "sync"

// goGroup runs the goroutines of something that ends (the session
// machinery's, the held calls'): Wait stops it taking more and waits for
// those it runs. A message from the Relay can arrive after the endpoint
// is closed; the goroutine it would start must not outlive the endpoint.
// Its zero value is ready to use; it is safe for concurrent use.
type goGroup struct {
	// mu guards closed, and orders wg.Add before Wait's wg.Wait.
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// Go runs f on a goroutine Wait waits for, unless Wait has begun; it
// reports whether f was started.
func (g *goGroup) Go(f func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Go(f)
	return true
}

// Wait stops g taking goroutines and waits for those it runs. It may be
// called more than once.
func (g *goGroup) Wait() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.wg.Wait()
}
