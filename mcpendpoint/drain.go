package mcpendpoint

import (
	"context"
	"errors"
)

// Shutdown of a replica (Drain, WaitCalls, StopCalls). The service stops
// in a grace period; the endpoint's part in it is to let the calls it runs
// finish within it and their answers reach their clients, and to cancel
// only what still runs when it ends. Drain closes at once what would only
// hold the HTTP server's Shutdown: the GET streams that listen for the
// server's messages, and the streams of calls that other replicas run
// (mirrors), whose clients resume them on a replica that stays. The
// sessions stay, here and in the SessionStore, and so do the calls'
// streams: a client whose connection dropped resumes its call's stream on
// another replica, which reads it from here through the Relay. WaitCalls
// waits for every call to end and every call stream's answer to be handed
// to a client (written to its connection, or sent to the replica that
// serves its resume); StopCalls, when the grace is nearly over, cancels
// the calls still running, upstream too, and each client gets a JSON-RPC
// error that says the service stopped before its call finished.

// errServiceStopped is the error a call cancelled by StopCalls answers.
var errServiceStopped = errors.New("the service stopped before the call finished: call the tool again")

// Drain starts the endpoint's part in a shutdown of the service (see
// above): the GET streams open close at once, and a new one is answered
// 503 with Retry-After, so that neither holds the HTTP server's
// Shutdown; so do the streams of calls that other replicas run read here,
// whose clients resume them elsewhere. Calls go on, new ones too, and the
// sessions stay, here and in the SessionStore. It returns at once and may
// be called more than once.
func (e *Endpoint) Drain() {
	e.drain.Drain()
	e.hub.EndMirrors()
}

// WaitCalls waits, after Drain, until no call runs here and the answer of
// every call stream held here was handed to a client (written to its
// connection, or sent to the replica where it resumed the stream), or
// until ctx ends; it reports whether it got there.
func (e *Endpoint) WaitCalls(ctx context.Context) bool {
	return e.drain.Wait(ctx)
}

// StopCalls ends the calls still running, when the grace of a shutdown is
// nearly over: each is cancelled, upstream too, and answers its client a
// JSON-RPC error saying that the service stopped before it finished (a
// call started from now on answers so at once). It then waits, within ctx,
// for those answers to reach the clients (WaitCalls), and closes the
// legacy SSE streams, on which alone their sessions' answers could come.
// It reports whether every answer was handed over.
func (e *Endpoint) StopCalls(ctx context.Context) bool {
	e.drain.Stop(errServiceStopped)
	ok := e.drain.Wait(ctx)
	e.sse.CloseSessions()
	return ok
}
