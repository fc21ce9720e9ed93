package session

import (
	"context"
	"errors"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// listenRetry and listenRetryMax bound the pause before a
// subscriptions/listen stream the server ended is opened again: it doubles
// from the first to the second, and starts again from the first after a
// stream that lasted longer than the second.
const (
	listenRetry    = time.Second
	listenRetryMax = 30 * time.Second
)

// listen keeps a subscriptions/listen stream open on s, a 2026-07-28
// session, for the list changes its server announces (s.listen): the
// notifications come through the client's handler, as the GET stream's do
// on older versions. It runs on a goroutine of the conn, started by
// connect, until s dies or the conn closes. A server that does not know
// the method is not asked again.
func (c *Conn) listen(s *Session) {
	ctx, cancel := context.WithCancel(c.lifetime)
	defer cancel()
	c.goFunc(func() {
		select {
		case <-s.dead:
		case <-ctx.Done():
		}
		cancel()
	})
	wait := listenRetry
	for {
		start := time.Now()
		err := s.client.Listen(ctx, s.listen)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, mcp.ErrMethodNotFound) {
			c.logger.Info("server has no subscriptions/listen; its list changes are not followed")
			return
		}
		if time.Since(start) > listenRetryMax {
			wait = listenRetry
		}
		c.logger.Debug("subscriptions/listen ended; opening it again", "wait", wait, logKeyErr, err)
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		wait = min(2*wait, listenRetryMax)
	}
}
