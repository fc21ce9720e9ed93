package adapter

import (
	"context"

	"github.com/elysia-go/elysia/discovery"
	"github.com/elysia-go/elysia/web/stream"
)

// Changes is stream.Changes over the Discovery: each event stream gets a
// channel that the Discovery signals whenever its servers' status may have
// changed (a reload, an eager connect, a tool call, a circuit change, a
// gateway's own state change: a process that died, a back-off that ended).
type Changes struct {
	disc *discovery.Discovery
	// life is the service's lifetime: when it ends (the service is
	// shutting down) every channel is closed, which ends the streams so
	// that http.Server.Shutdown need not wait for open pages.
	life context.Context //nolint:containedctx // component lifetime, see comment
}

var _ stream.Changes = Changes{}

// NewChanges returns the Changes for web.Options; the streams end when
// life does.
func NewChanges(life context.Context, d *discovery.Discovery) Changes {
	return Changes{disc: d, life: life}
}

// Subscribe implements stream.Changes.
func (c Changes) Subscribe(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{}, 1)
	c.disc.Notify(ch)
	// Stop comes before close: once Stop returns the Discovery sends
	// nothing more, so the close cannot race a send.
	stopEnd := context.AfterFunc(c.life, func() {
		c.disc.Stop(ch)
		close(ch)
	})
	context.AfterFunc(ctx, func() {
		if stopEnd() { // the stream ended first
			c.disc.Stop(ch)
		}
	})
	return ch
}
