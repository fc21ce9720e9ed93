package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpendpoint/internal/samplerelay"
)

// mcp-go sends a sampling request only on the session's GET stream, which
// may be open on another replica than the one serving the call: the
// request then goes there through the Relay, that replica puts it to the
// client, and the client's message comes back the same way.
//
// A client opens its GET stream when it likes: the TypeScript SDK's opens
// it as it sends its first request, so a call's sampling request can come
// before the stream is open anywhere, or while it is opening on either
// replica (a balancer sends the GET where it likes). So a replica that
// has the session but not the stream waits up to sampleStreamWait for it
// to open before it lets the request go; the one that puts the request to
// the client says so first (mcp_sample_taken); and the asking replica,
// told nothing within sampleTakenWait (or sampleTakenGrace after its own
// stream opened), puts it to its own stream if that is open, or fails the
// request saying why. No request waits for a stream that never comes.

// maxRelayedSampling bounds how long a replica waits for the client's
// message of a sampling request another replica relayed, whatever that
// replica's deadline.
const maxRelayedSampling = 10 * time.Minute

// sampleStreamWait is how long a replica with the session waits for its
// GET stream to open before it lets another replica's sampling request
// go; sampleTakenWait is how long the asking replica waits to hear that
// one took it: sampleStreamWait, and the Relay's delivery both ways.
// sampleTakenGrace is how long it waits for that word once its own GET
// stream opened.
const (
	sampleStreamWait = 5 * time.Second
	sampleTakenWait  = sampleStreamWait + 5*time.Second
	sampleTakenGrace = time.Second
)

// Sample puts req to the client of the session in ctx and waits for its
// message, or ctx: mcp-go puts it on the session's GET stream, and when
// that is not open here, the request goes to the replica where it is, or
// opens.
func (h *Hub) Sample(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if h.Relay != nil && h.Sessions != nil {
		sid := sessionID(ctx)
		if user, ok := h.Book.Owner(sid); ok && !h.Book.Streaming(sid, user) {
			return h.sampleElsewhere(ctx, sid, user, req) // mcp-go sends it only on the GET stream, not open here
		}
	}
	return h.sampleHere(ctx, req)
}

// sampleHere puts req to the client on the session's GET stream here.
func (h *Hub) sampleHere(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	// Sampling is the 2025-11-25 protocol's, which the endpoint serves.
	//lint:ignore SA1019 sampling of the protocol version the endpoint serves (2025-11-25)
	return h.srv.RequestSampling(ctx, req) //nolint:staticcheck // see above
}

// sampleElsewhere sends req of session sid (user's) to the other
// replicas, one of which has the session's GET stream or is about to, and
// waits for the client's message, or ctx, at most maxRelayedSampling: as
// long as the replica that holds the stream waits for it. Told within
// sampleTakenWait by no replica that it took the request, it puts req to
// its own GET stream if that opened meanwhile, or fails.
func (h *Hub) sampleElsewhere(ctx context.Context, sid, user string, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("sampling request: %w", err)
	}
	reply, results, taken, done := h.samples.Wait()
	defer done()
	deadline := time.Now().Add(maxRelayedSampling)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	// The wait is as long as the other replica's: a lost reply, or a gone
	// replica, ends it there rather than holding the call until its client
	// cancels.
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if err := h.publish(Message{Kind: relaySample, Session: idHash(sid), Reply: reply, Deadline: deadline, Body: body}); err != nil {
		return nil, fmt.Errorf("the MCP client's GET stream is on another replica, which could not be reached: %w", err)
	}
	// The GET stream may open here instead: then the request is put to it,
	// unless a replica says it took it within sampleTakenGrace (its word
	// may be on its way).
	opened := h.Book.StreamOpened()
	untaken := time.NewTimer(sampleTakenWait)
	defer untaken.Stop()
	if h.Book.Streaming(sid, user) { // opened since Sample looked
		opened = nil
		untaken.Reset(sampleTakenGrace)
	}
	for {
		select {
		case m := <-results:
			return relayedResult(m)
		case <-taken:
			taken, opened = nil, nil // the replica that took it answers on results
			untaken.Stop()
		case <-opened: // some session's stream opened here: this one's?
			opened = h.Book.StreamOpened()
			if h.Book.Streaming(sid, user) {
				opened = nil
				untaken.Reset(sampleTakenGrace)
			}
		case <-untaken.C:
			if h.Book.Streaming(sid, user) {
				return h.sampleHere(ctx, req) // the stream opened here after all
			}
			return nil, errNotTaken(nil)
		case <-ctx.Done():
			if taken != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, errNotTaken(ctx.Err())
			}
			return nil, ctx.Err()
		}
	}
}

// errNotTaken is the error of a sampling request that no replica said it
// put to the client, within sampleTakenWait or before cause ended the wait.
func errNotTaken(cause error) error {
	msg := fmt.Sprintf("sampling: no replica put the request to the MCP client within %v; the client may have no GET stream open, "+
		"which is where a 2025-11-25 client receives a server's sampling requests", sampleTakenWait)
	if cause != nil {
		return fmt.Errorf("%s (%w)", msg, cause)
	}
	return errors.New(msg)
}

// relayedResult is the outcome of a sampling request another replica put
// to the client.
func relayedResult(m samplerelay.Result) (*mcp.CreateMessageResult, error) {
	if m.Error != "" {
		return nil, errors.New(m.Error)
	}
	var res mcp.CreateMessageResult
	if err := json.Unmarshal(m.Body, &res); err != nil {
		return nil, fmt.Errorf("sampling result relayed by another replica: %w", err)
	}
	content, err := mcp.ParseSamplingContent(res.Content)
	if err != nil {
		return nil, fmt.Errorf("sampling result relayed by another replica: %w", err)
	}
	res.Content = content
	return &res, nil
}

// receiveSample takes a sampling request another replica relayed
// (relaySample): if the session's GET stream is open here, or opens within
// sampleStreamWait (and before the asking replica's deadline), the asking
// replica is told (relaySampleTaken) and the request put to the client,
// on a goroutine of the endpoint.
func (h *Hub) receiveSample(m *Message) {
	h.samples.Go(func(ctx context.Context) {
		// The session may not be open here yet: the GET that opens its
		// stream here may be adopting it. The wait ends with the asking
		// replica's.
		until := time.Now().Add(sampleStreamWait)
		if !m.Deadline.IsZero() && m.Deadline.Before(until) {
			until = m.Deadline
		}
		wait, cancel := context.WithDeadline(ctx, until)
		id, _, open := h.Book.WaitStreamingHash(wait, m.Session)
		cancel()
		cs := h.samples.Session(id)
		if !open || cs == nil {
			return
		}
		if err := h.publish(Message{Kind: relaySampleTaken, Reply: m.Reply}); err != nil {
			// Untold, the asking replica may put it to a stream of its own.
			h.Logger.Warn("telling the replica that asked that its sampling request is taken", logKeyErr, err)
			return
		}
		h.putSample(ctx, cs, m)
	})
}

// receiveSampleTaken takes the news that another replica put a sampling
// request this replica relayed to the client (relaySampleTaken).
func (h *Hub) receiveSampleTaken(m *Message) { h.samples.Taken(m.Reply) }

// receiveSampled takes the result of a sampling request this replica
// relayed (relaySampled), if it still waits for it.
func (h *Hub) receiveSampled(m *Message) {
	h.samples.Deliver(m.Reply, samplerelay.Result{Body: m.Body, Error: m.Error})
}

// putSample puts a relayed sampling request to the client of cs, on its
// GET stream here, and relays the client's message back; ctx ends it.
func (h *Hub) putSample(ctx context.Context, cs mcpserver.ClientSession, m *Message) {
	deadline := m.Deadline
	if limit := time.Now().Add(maxRelayedSampling); deadline.IsZero() || deadline.After(limit) {
		deadline = limit
	}
	ctx, cancel := context.WithDeadline(h.srv.WithContext(ctx, cs), deadline)
	defer cancel()
	reply := Message{Kind: relaySampled, Reply: m.Reply}
	var req mcp.CreateMessageRequest
	if err := json.Unmarshal(m.Body, &req); err != nil {
		reply.Error = "sampling request relayed by another replica: " + err.Error()
	} else {
		//lint:ignore SA1019 sampling of the protocol version the endpoint serves (2025-11-25)
		res, err := h.srv.RequestSampling(ctx, req) //nolint:staticcheck // see above
		if err != nil {
			reply.Error = err.Error()
		} else if reply.Body, err = json.Marshal(res); err != nil {
			reply.Error = "sampling result: " + err.Error()
		}
	}
	if err := h.publish(reply); err != nil {
		h.Logger.Warn("relaying a sampling result to the replica that asked", logKeyErr, err)
	}
}
