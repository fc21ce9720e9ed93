package session

import (
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// health pings s every HealthInterval while it is the live session. A failed
// ping (no answer within connect_timeout, or a transport error) marks s dead,
// so the watcher retires it and the next call connects again, instead of a
// user's call being the one to find out. It is started by connect, owned by
// wg, and ends with s or with Close.
func (c *Conn) health(s *Session) {
	ticker := time.NewTicker(c.opts.HealthInterval)
	defer ticker.Stop()
	timeout, _ := c.cfg.Timeouts()
	for {
		select {
		case <-s.dead:
			return
		case <-c.lifetime.Done():
			return
		case <-ticker.C:
		}
		ctx, cancel := context.WithTimeout(c.lifetime, timeout)
		stop := s.WedgeGuard(ctx, "health ping")
		err := c.ping(ctx, s)
		stop()
		cancel()
		if err == nil || IsServerAnswer(err) {
			continue // an error answer still proves the server is there
		}
		if c.lifetime.Err() != nil {
			return
		}
		err = fmt.Errorf("health ping: %w", err)
		c.logger.Warn("gateway health ping failed", logKeyErr, c.mask(err.Error()))
		s.MarkDead(err)
		return
	}
}

// ping checks that s answers. mcp-go's Ping sends nothing on the modern
// (2026-07-28) protocol, so there a raw tools/list is the probe.
func (c *Conn) ping(ctx context.Context, s *Session) error {
	if mcp.IsModernProtocol(s.client.ProtocolVersion()) {
		_, err := c.ListTools(ctx, s)
		return err
	}
	// Ping is deprecated because the modern protocol dropped it; it is
	// still the liveness probe of the legacy versions negotiated here.
	//lint:ignore SA1019 reached only on a legacy protocol version
	return s.client.Ping(ctx) //nolint:staticcheck // legacy protocol versions only
}
