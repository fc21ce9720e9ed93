package mcpendpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpendpoint/internal/jsonrpc"
	"github.com/elysia-go/elysia/mcpendpoint/internal/sessions"
	"github.com/elysia-go/elysia/mcpgateway"
)

// MaxSubscriptionsPerSession bounds the resources one MCP session may be
// subscribed to at once; a subscription past it is refused
// (ErrTooManySubscriptions). Subscriptions are a 2025-11-25 session's
// (internal/sessions).
const MaxSubscriptionsPerSession = sessions.MaxSubscriptionsPerSession

// Subscriber is a Resourceful upstream that passes on resources/subscribe;
// *mcpgateway.Gateway is one. updated is called for each
// notifications/resources/updated of uri until stop; it must not block.
type Subscriber interface {
	Subscribe(ctx context.Context, uri string, updated func()) (stop func(context.Context) error, err error)
}

// onRequest takes resources/subscribe and resources/unsubscribe before
// mcp-go does (which then only acknowledges them), and refuses a
// 2026-07-28 retry whose requestState is not good (checkRetry): an error
// refuses the request with it (-32600, and 400 over HTTP). Every other
// request passes untouched.
func (e *Endpoint) onRequest(ctx context.Context, _ any, message any) error {
	raw, ok := message.(json.RawMessage)
	if !ok || (!bytes.Contains(raw, []byte(`"requestState"`)) && !bytes.Contains(raw, []byte(`"resources/`))) {
		return nil // the cheap test: most requests are none of these
	}
	m, ok := jsonrpc.Decode(raw)
	if !ok {
		return nil // mcp-go answers what it cannot parse
	}
	var p struct {
		URI string `json:"uri"`
	}
	switch m.Method {
	case string(mcp.MethodToolsCall):
		return e.checkRetry(ctx, m)
	case string(mcp.MethodResourcesSubscribe):
		if m.DecodeParams(&p) == nil {
			return e.hub.Subscribe(ctx, p.URI)
		}
	case string(mcp.MethodResourcesUnsubscribe):
		if m.DecodeParams(&p) == nil {
			e.hub.Unsubscribe(ctx, p.URI)
		}
	}
	return nil
}

// subscribeUpstream subscribes user to uri at the server that lists it,
// calling updated for each of its updates, and returns the func that ends
// that subscription (sessions.Config.SubscribeUpstream).
func (e *Endpoint) subscribeUpstream(ctx context.Context, user, uri string, updated func()) (stop func(context.Context) error, err error) {
	r, name := e.resourceOwner(ctx, uri)
	if r == nil {
		return nil, fmt.Errorf("no server of this service lists resource %q: %w", uri, mcpserver.ErrResourceNotFound)
	}
	sub, ok := r.(Subscriber)
	if !ok {
		return nil, fmt.Errorf("server %q cannot be subscribed to: %w", name, ErrNotSubscribable)
	}
	// The gateway takes updated before it asks: the server may send an
	// update before it answers.
	stop, err = sub.Subscribe(mcpgateway.WithUser(ctx, user), uri, updated)
	if err != nil {
		return nil, fmt.Errorf("server %q refused the subscription to %q: %w", name, uri, err)
	}
	return stop, nil
}
