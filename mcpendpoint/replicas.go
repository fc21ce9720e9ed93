package mcpendpoint

import (
	"context"
	"time"

	"github.com/elysia-go/elysia/mcpendpoint/internal/sessions"
)

// Replicas keeps a liveness lease for each replica of the service, where
// all of them read it: a replica renews its own while it runs, and one
// whose lease expired, or that has none, is gone. It is the evidence a
// replica needs before it tells a client that another replica, which runs
// the client's call, is gone: a replica that is only slow to answer
// through the Relay keeps its lease. Its methods are safe for concurrent
// use.
type Replicas = sessions.Replicas

// The liveness lease of a replica: renewed every leaseRenew, it lasts
// leaseTTL, so that a replica stalled for less than leaseTTL-leaseRenew
// (a long garbage collection, a paused VM, SIGSTOP) is not taken for gone.
const (
	leaseTTL   = 30 * time.Second
	leaseRenew = 5 * time.Second
)

// resumeRelayWait is how long a replica is given to answer through the
// Relay before its silence counts: the holder of a call stream a client
// resumes elsewhere (internal/sessions), or of a call a relayed retry is
// for (heldrelay.go).
const resumeRelayWait = 3 * time.Second

// keepLease renews this replica's liveness lease every leaseRenew until
// ctx ends, then drops it: the others know at once that it is gone. Each
// renewal is bounded by storeWait; a failed one is logged, and the lease
// lives on until it expires.
func (e *Endpoint) keepLease(ctx context.Context) {
	renew := func() {
		rctx, cancel := context.WithTimeout(ctx, e.storeWait)
		defer cancel()
		if err := e.opts.Replicas.RenewReplica(rctx, e.tag, leaseTTL); err != nil && ctx.Err() == nil {
			e.logger.Warn("renewing this replica's liveness lease", logKeyErr, err)
		}
	}
	renew()
	t := time.NewTicker(leaseRenew)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.storeWait)
			defer cancel()
			if err := e.opts.Replicas.DropReplica(dctx, e.tag); err != nil {
				e.logger.Warn("dropping this replica's liveness lease: the others take it for gone once it expires", logKeyErr, err)
			}
			return
		case <-t.C:
			renew()
		}
	}
}
