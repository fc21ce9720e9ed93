package session

import (
	"context"
	"errors"
	"slices"
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
// session, for what the server is to tell it: the list changes the server
// announces (s.listen) and the resources subscribed to through s's client
// (mcp-go's Subscribe only records them there; Relisten opens the stream
// again with them). The notifications come through the client's handler,
// as the GET stream's do on older versions. With nothing to listen for, no
// stream is open. It runs on a goroutine of the conn, started by connect,
// until s dies or the conn closes. A server that does not know the method
// is not asked again.
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
		sctx, stop := context.WithCancel(ctx)
		s.listenStop.Store(&stop)
		// Drained before the filter is read: a Relisten from now on ends
		// this stream.
		select {
		case <-s.relisten:
		default:
		}
		filter := s.listen
		filter.ResourceSubscriptions = s.subscribed()
		start := time.Now()
		var err error
		if filter.IsEmpty() {
			<-sctx.Done()
		} else {
			err = s.client.Listen(sctx, filter)
		}
		relisten := sctx.Err() != nil
		s.listenStop.Store(nil)
		stop()
		switch {
		case ctx.Err() != nil:
			return
		case relisten:
			wait = listenRetry
			continue
		case errors.Is(err, mcp.ErrMethodNotFound):
			c.logger.Info("server has no subscriptions/listen; its list changes and resource updates are not followed")
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
		case <-s.relisten:
			timer.Stop()
		case <-timer.C:
		}
		wait = min(2*wait, listenRetryMax)
	}
}

// Subscribe adds uri to the resources the subscriptions/listen stream of a
// 2026-07-28 session carries, and opens the stream again with it; on an
// older version it sends resources/subscribe. It is safe for concurrent
// use.
func (s *Session) Subscribe(ctx context.Context, uri string) error {
	if !mcp.IsModernProtocol(s.protocol) {
		req := mcp.SubscribeRequest{}
		req.Params.URI = uri
		//lint:ignore SA1019 resources/subscribe of the released protocol versions the gateway speaks
		return s.client.Subscribe(ctx, req) //nolint:staticcheck // see above
	}
	s.resMu.Lock()
	if !slices.Contains(s.resources, uri) {
		s.resources = append(s.resources, uri)
	}
	s.resMu.Unlock()
	s.Relisten()
	return nil
}

// Unsubscribe takes uri out of what Subscribe added (resources/unsubscribe
// on an older version).
func (s *Session) Unsubscribe(ctx context.Context, uri string) error {
	if !mcp.IsModernProtocol(s.protocol) {
		req := mcp.UnsubscribeRequest{}
		req.Params.URI = uri
		//lint:ignore SA1019 resources/unsubscribe of the released protocol versions the gateway speaks
		return s.client.Unsubscribe(ctx, req) //nolint:staticcheck // see above
	}
	s.resMu.Lock()
	s.resources = slices.DeleteFunc(s.resources, func(u string) bool { return u == uri })
	s.resMu.Unlock()
	s.Relisten()
	return nil
}

// subscribed returns the resources the listen stream is to carry.
func (s *Session) subscribed() []string {
	s.resMu.Lock()
	defer s.resMu.Unlock()
	return slices.Clone(s.resources)
}

// Relisten opens the subscriptions/listen stream of a 2026-07-28 session
// again, so that it carries the resource subscriptions made (or dropped)
// since. It does nothing on older versions, where those are requests of
// their own. It does not block, and is safe for concurrent use.
func (s *Session) Relisten() {
	if !mcp.IsModernProtocol(s.protocol) {
		return
	}
	select {
	case s.relisten <- struct{}{}:
	default:
	}
	if stop := s.listenStop.Load(); stop != nil {
		(*stop)()
	}
}
