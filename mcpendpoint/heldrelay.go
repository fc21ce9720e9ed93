package mcpendpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpendpoint/internal/held"
	"github.com/elysia-go/elysia/mcpendpoint/internal/reply"
	"github.com/elysia-go/elysia/mcpendpoint/internal/reqstate"
	"github.com/elysia-go/elysia/mcpendpoint/internal/sessions"
	"github.com/elysia-go/elysia/mcpgateway"
)

// A 2026-07-28 retry that lands on another replica than the one holding
// its call (the requestState names it) is passed to the holder through
// the Relay: one message kind, relayInputRetry, in two shapes (see
// doc.go). The asking replica has checked the requestState; the holder
// opens it again, hands the answers to the call and publishes what the
// call does next (its result, or its next questions with a requestState
// of the holder's), saying every inputRelayKeepalive meanwhile that it
// still waits. The asking replica gives the holder resumeRelayWait to be
// heard from, and then a silence of three keepalives: past that, a holder
// whose liveness lease has expired (or, without Replicas, any) is gone,
// and the client is told to call the tool again; so it is when a holder
// with a live lease has been silent for leaseTTL (its outcome was lost).

const (
	// inputRelayKeepalive is how often the holder of a relayed retry
	// tells the asking replica that the call has no event yet.
	inputRelayKeepalive = 2 * time.Second
	// maxRelayedWait bounds the wait of a relayed retry for its call's
	// next event, on both sides.
	maxRelayedWait = 30 * time.Minute
)

// retryElsewhere passes a retry, whose requestState st (text, checked)
// names a call another replica holds, to that replica and waits for the
// outcome: under p, the call may become a task there, whose envelope is
// then the reply here.
func (e *Endpoint) retryElsewhere(ctx context.Context, st reqstate.State, text string, rs mcp.InputResponses, p taskPolicy) (*mcp.CallToolResult, error) {
	if e.opts.Relay == nil {
		return nil, fmt.Errorf("%w: it waits on another replica of the service, which this one cannot reach: call the tool again", ErrCallGone)
	}
	raw, err := json.Marshal(rs)
	if err != nil {
		return nil, fmt.Errorf("inputResponses: %w", err)
	}
	reply := held.NewID()
	c := make(chan *envelope, 1)
	t := e.held
	t.mu.Lock()
	t.waiting[reply] = c
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.waiting, reply)
		t.mu.Unlock()
	}()
	req := envelope{Message: sessions.Message{Kind: relayInputRetry, Reply: reply}, Holder: st.Replica, State: text, Responses: raw}
	if p.eligible() {
		req.Tasks = &relayTasks{Support: p.support, Declared: p.declared}
	}
	if err := e.publish(req); err != nil {
		e.logger.Warn("relaying a 2026-07-28 retry to the replica holding its call", logKeyErr, err)
		return nil, errors.New("the answers could not be passed to the replica of the service holding the call: call the tool again")
	}
	silence := time.NewTimer(resumeRelayWait)
	defer silence.Stop()
	deadline := time.NewTimer(maxRelayedWait + time.Minute)
	defer deadline.Stop()
	heard := time.Now()
	for {
		select {
		case m := <-c:
			if m.Waiting {
				heard = time.Now()
				silence.Reset(3 * inputRelayKeepalive)
				continue
			}
			if m.Error != "" {
				return nil, errors.New(m.Error)
			}
			if len(m.Task) > 0 && p.reply != nil {
				p.reply.SetResult(m.Task)
				return &mcp.CallToolResult{}, nil
			}
			var res mcp.CallToolResult
			if err := json.Unmarshal(m.Result, &res); err != nil {
				return nil, fmt.Errorf("the result relayed by the replica holding the call: %w", err)
			}
			return &res, nil
		case <-silence.C:
			gone, err := e.holderGone(ctx, st.Replica)
			switch {
			case err == nil && !gone && time.Since(heard) > leaseTTL:
				// Alive and silent this long: its outcome was lost.
				return nil, fmt.Errorf("%w: no word from the replica of the service holding it for %v: call the tool again", ErrCallGone, leaseTTL)
			case err != nil:
				e.logger.Warn("reading the replicas' liveness leases for a relayed retry", logKeyErr, err)
				return nil, errors.New("whether the replica of the service holding the call is alive could not be read: call the tool again")
			case gone:
				return nil, fmt.Errorf("%w: the replica of the service holding it stopped: call the tool again", ErrCallGone)
			}
			silence.Reset(3 * inputRelayKeepalive) // slow, not gone
		case <-deadline.C:
			return nil, fmt.Errorf("%w: no word from the replica holding it for %v: call the tool again", ErrCallGone, maxRelayedWait)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// holderGone reports whether replica tag is gone: its liveness lease
// expired or it has none. Without Replicas, a silent replica is gone.
func (e *Endpoint) holderGone(ctx context.Context, tag string) (bool, error) {
	if e.opts.Replicas == nil {
		return true, nil
	}
	ctx, cancel := context.WithTimeout(ctx, min(e.storeWait, resumeRelayWait))
	defer cancel()
	live, err := e.opts.Replicas.LiveReplicas(ctx)
	if err != nil {
		return false, err
	}
	return !slices.Contains(live, tag), nil
}

// receiveInputRetry takes a relayInputRetry message, on the Relay's
// goroutine: an outcome goes to the retry waiting here, a retry for this
// replica is served on a goroutine of the endpoint.
func (e *Endpoint) receiveInputRetry(m *envelope) {
	if m.Outcome {
		t := e.held
		t.mu.Lock()
		c := t.waiting[m.Reply]
		t.mu.Unlock()
		if c == nil {
			return
		}
		if m.Waiting {
			select {
			case c <- m:
			default: // one is enough
			}
			return
		}
		select {
		case <-c: // a keepalive not read yet: the outcome replaces it
		default:
		}
		select {
		case c <- m:
		default: // answered already
		}
		return
	}
	if m.Holder != e.tag {
		return
	}
	e.held.run.Go(func() { e.serveRelayedRetry(m) })
}

// serveRelayedRetry serves a retry another replica relayed here and
// publishes its outcome.
func (e *Endpoint) serveRelayedRetry(m *envelope) {
	ctx, cancel := context.WithTimeout(e.held.life, maxRelayedWait)
	defer cancel()
	out := envelope{Message: sessions.Message{Kind: relayInputRetry, Reply: m.Reply}, Outcome: true}
	res, task, err := e.relayedRetry(ctx, m)
	switch {
	case err == nil && task != nil:
		out.Task = task
	case err == nil:
		out.Result, err = json.Marshal(res)
	}
	if err != nil {
		out.Result, out.Error = nil, err.Error()
	}
	err = e.publish(out)
	if errors.Is(err, errRelayTooLarge) && out.Error == "" {
		// The call ran: its client must not be told to call it again, as
		// silence would have it told.
		out.Result, out.Task = nil, nil
		out.Error = fmt.Sprintf("the call ended, but its result of more than %d bytes could not be passed on from the replica that ran it; "+
			"check whether it took effect before calling it again", maxRelayMessage)
		err = e.publish(out)
	}
	if err != nil {
		e.logger.Warn("relaying a 2026-07-28 call's outcome to the replica that has its client", logKeyErr, err)
	}
}

// relayedRetry hands a relayed retry's answers to its call and waits for
// the call's next event, telling the asking replica every
// inputRelayKeepalive that it waits. A call that becomes a task (the
// retry's policy allowed it) gives its envelope.
func (e *Endpoint) relayedRetry(ctx context.Context, m *envelope) (*mcp.CallToolResult, json.RawMessage, error) {
	st, err := e.sealer.Open(m.State, time.Now()) // its user and request: checked by the replica that took it
	if err != nil {
		return nil, nil, err
	}
	h := e.held.get(st.Call)
	if st.Replica != e.tag || h == nil || !bytes.Equal(reqstate.UserHash(h.User()), st.User) {
		return nil, nil, fmt.Errorf("%w: it ended, or waited longer than %v for these answers: call the tool again", ErrCallGone, e.opts.InputWait)
	}
	var rs mcp.InputResponses
	if len(m.Responses) > 0 {
		if err := json.Unmarshal(m.Responses, &rs); err != nil {
			return nil, nil, fmt.Errorf("inputResponses: %w", err)
		}
	}
	if err := h.Answer(st.Round, rs); err != nil {
		return nil, nil, err
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		ka := envelope{Message: sessions.Message{Kind: relayInputRetry, Reply: m.Reply}, Outcome: true, Waiting: true}
		t := time.NewTicker(inputRelayKeepalive)
		defer t.Stop()
		for {
			_ = e.publish(ka) // a lost one: the next, or the lease, speaks for this replica
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()
	var p taskPolicy
	if m.Tasks != nil {
		p = taskPolicy{support: m.Tasks.Support, declared: m.Tasks.Declared, reply: &reply.Reply{}}
	}
	res, err := e.awaitTask(mcpgateway.WithUser(ctx, h.User()), h, &held.Waiter{Ctx: ctx}, p)
	if p.reply != nil {
		if task, _ := p.reply.Get(); task != nil {
			return nil, task, err
		}
	}
	return res, nil, err
}
