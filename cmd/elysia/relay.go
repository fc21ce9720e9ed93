package main

import (
	"errors"
	"fmt"

	"github.com/elysia-go/elysia/web/stream"
)

// relay returns what carries stops, answers to servers' questions and the
// event streams' news between the replicas of the service: the store's
// Bus (LISTEN/NOTIFY) on PostgreSQL; nil with SQLite or without a store,
// where this process is the only replica. startRelay starts it.
func (a *app) relay() stream.Relay {
	if a.store == nil {
		return nil
	}
	bus, err := a.store.NewBus()
	if err != nil { // store.ErrNoBus: SQLite, which one process uses
		return nil
	}
	a.bus = bus
	return bus
}

// startRelay starts the relay that relay returned, if any, delivering
// what the other replicas send to st and to the aggregate MCP endpoint;
// stop ends it and must be called before the store closes.
func (a *app) startRelay(st *stream.Streams) (stop func(), err error) {
	if a.bus == nil {
		return func() {}, nil
	}
	deliver := st.Receive
	if ep := a.mcp; ep != nil {
		deliver = func(msg []byte) {
			ep.Receive(msg) // before st takes msg: it owns it
			st.Receive(msg)
		}
	}
	if err := a.bus.Start(deliver); err != nil {
		return nil, fmt.Errorf("relay between replicas: %w", err)
	}
	return func() {
		if err := a.bus.Close(); err != nil {
			a.logger.Warn("closing the relay between replicas", logKeyErr, err)
		}
	}, nil
}

// relayReady reports whether the replica hears the others: a replica that
// does not would answer 404 to a stop or an answer for work they hold.
func (a *app) relayReady() error {
	if a.bus != nil && !a.bus.Listening() {
		return errors.New("not yet listening to the other replicas")
	}
	return nil
}
