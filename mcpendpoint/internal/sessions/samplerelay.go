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

// maxRelayedSampling bounds how long a replica waits for the client's
// message of a sampling request another replica relayed, whatever that
// replica's deadline.
const maxRelayedSampling = 10 * time.Minute

// Sample puts req to the client of the session in ctx and waits for its
// message, or ctx: mcp-go puts it on the session's GET stream, and when
// that is open on another replica, the request goes there.
func (h *Hub) Sample(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if h.Relay != nil && h.Sessions != nil {
		sid := sessionID(ctx)
		if user, ok := h.Book.Owner(sid); ok && !h.Book.Streaming(sid, user) {
			return h.sampleElsewhere(ctx, sid, req) // mcp-go sends it only on the GET stream, not open here
		}
	}
	// Sampling is the 2025-11-25 protocol's, which the endpoint serves.
	//lint:ignore SA1019 sampling of the protocol version the endpoint serves (2025-11-25)
	return h.srv.RequestSampling(ctx, req) //nolint:staticcheck // see above
}

// sampleElsewhere sends req of session sid to the other replicas, one of
// which holds the session's GET stream, and waits for the client's
// message, or ctx, at most maxRelayedSampling: as long as the replica that
// holds the stream waits for it.
func (h *Hub) sampleElsewhere(ctx context.Context, sid string, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("sampling request: %w", err)
	}
	reply, c, done := h.samples.Wait()
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
	select {
	case m := <-c:
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
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// receiveSample takes a sampling request another replica relayed
// (relaySample): it is put to the client, on a goroutine of the endpoint,
// if the session's GET stream is open here.
func (h *Hub) receiveSample(m *Message) {
	id := h.Book.ByHash(m.Session)
	user, ok := h.Book.Owner(id)
	if !ok || !h.Book.Streaming(id, user) {
		return
	}
	cs := h.samples.Session(id)
	if cs == nil {
		return
	}
	h.samples.Go(func(ctx context.Context) { h.putSample(ctx, cs, m) })
}

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
