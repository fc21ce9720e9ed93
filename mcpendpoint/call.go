package mcpendpoint

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpendpoint/internal/catalog"
	"github.com/elysia-go/elysia/mcpendpoint/internal/content"
	"github.com/elysia-go/elysia/mcpendpoint/internal/held"
	"github.com/elysia-go/elysia/mcpendpoint/internal/names"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

// beforeCallTool renames every call to the router, keeping the client's
// name in _meta: the tools are the user's, not mcp-go's registry's.
func (e *Endpoint) beforeCallTool(_ context.Context, _ any, req *mcp.CallToolRequest) {
	if req.Params.Meta == nil {
		req.Params.Meta = &mcp.Meta{}
	}
	if req.Params.Meta.AdditionalFields == nil {
		req.Params.Meta.AdditionalFields = map[string]any{}
	}
	req.Params.Meta.AdditionalFields[nameKey] = req.Params.Name
	req.Params.Name = routerTool
}

// route answers one tools/call for ctx's user. A call that StopCalls
// ended without a result answers errServiceStopped, which mcp-go sends
// the client as a JSON-RPC error. A 2026-07-28 call runs on a goroutine
// of the endpoint (routeModern), which calls route again.
func (e *Endpoint) route(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if isModern(ctx) && held.FromContext(ctx) == nil {
		return e.routeModern(ctx, req)
	}
	ctx, done := e.drain.Call(ctx)
	defer done()
	res, err := e.routeCall(ctx, req)
	if errors.Is(context.Cause(ctx), errServiceStopped) && (err != nil || res == nil || res.IsError) {
		return nil, errServiceStopped
	}
	return res, err
}

// routeCall is route's call.
func (e *Endpoint) routeCall(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name := clientToolName(req)
	user := mcpgateway.UserFrom(ctx)
	ctx, done := e.hub.Track(ctx)
	defer done()
	args, err := content.Arguments(req)
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	emit := e.callEmitter(ctx, req)
	if _, ok := emit.(samplingEmitter); !ok {
		ctx = mcpgateway.WithCallerSampling(ctx, nil) // its servers' sampling is the service's, or nobody's
	}
	ex := e.expose()
	if name == catalog.AskName && ex.Agent && e.opts.Agent != nil {
		return e.ask(ctx, user, args, emit)
	}
	if ex.Mode == mcpconfig.ExposeGateways {
		return e.callGateway(ctx, user, name, args, emit)
	}
	cat := e.catalogFor(ctx, user, false)
	if catalog.Mode(ex, cat) == mcpconfig.ExposeSearch {
		switch name {
		case catalog.SearchName:
			return e.search(ctx, user, cat, args)
		case catalog.CallName:
			n, _ := args["name"].(string)
			if n == "" {
				return mcp.NewToolResultError(`call_tool needs "name": a tool's name as search_tools gave it`), nil
			}
			inner, _ := args["arguments"].(map[string]any)
			if v, ok := args["arguments"]; ok && v != nil && inner == nil {
				return mcp.NewToolResultError(`call_tool "arguments" must be an object`), nil
			}
			return e.callNamed(ctx, user, n, inner, emit)
		}
	}
	return e.callNamed(ctx, user, name, args, emit)
}

// callNamed calls the tool the client names, through its gateway.
func (e *Endpoint) callNamed(ctx context.Context, user, name string, args map[string]any, emit tools.Emitter) (*mcp.CallToolResult, error) {
	cat, en := e.lookup(ctx, user, name)
	if en == nil {
		msg := fmt.Sprintf("unknown tool %q", name)
		if c := names.Closest(name, cat.Names(), 5); len(c) > 0 {
			msg += "; closest: " + strings.Join(c, ", ")
		}
		return mcp.NewToolResultError(msg), nil
	}
	if en.SignIn != nil {
		return e.failure(ctx, en.Server, en.SignIn)
	}
	up := en.Up.(Upstream) // built from e.src.Upstreams(): always one
	res, err := up.ExecuteWith(mcpgateway.WithUser(ctx, user), en.Tool, args, emit)
	if err != nil {
		noteFailure(ctx, err)
		return e.failure(ctx, en.Server, err)
	}
	return content.Result(res), nil
}

// callGateway runs a gateway tool (gateways mode) as the tree does.
func (e *Endpoint) callGateway(ctx context.Context, user, name string, args map[string]any, emit tools.Emitter) (*mcp.CallToolResult, error) {
	var known []string
	for _, up := range e.src.Upstreams() {
		t, ok := up.(tools.Tool)
		if !ok {
			continue
		}
		if t.Name() != name {
			known = append(known, t.Name())
			continue
		}
		res, err := t.Run(mcpgateway.WithUser(ctx, user), tools.Call{Args: args, UserID: user}, emit)
		if err != nil {
			return e.failure(ctx, up.Config().Name, err)
		}
		return content.OfTool(res), nil
	}
	msg := fmt.Sprintf("unknown tool %q", name)
	if c := names.Closest(name, known, 5); len(c) > 0 {
		msg += "; closest: " + strings.Join(c, ", ")
	}
	return mcp.NewToolResultError(msg), nil
}

// failure turns a call's error into what the client gets: a cancelled call
// stays an error (mcp-go answers it, or nobody waits); everything the
// client or the user can act on is an isError result saying what to do.
func (e *Endpoint) failure(ctx context.Context, server string, err error) (*mcp.CallToolResult, error) {
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if isSignIn(err) {
		msg := err.Error()
		if u := signInURL(ctx, server); u != "" {
			msg += "; sign in at " + u
		} else {
			msg += "; sign in with: elysia mcp login " + server
		}
		res := mcp.NewToolResultError(msg)
		res.Meta = mcp.NewMetaFromMap(map[string]any{"dev.elysia/sign_in_url": signInURL(ctx, server)})
		return res, nil
	}
	return mcp.NewToolResultError(err.Error()), nil
}

// baseKey carries the service's base URL (scheme://host) in a request's
// ctx, for sign-in links.
type baseKey struct{}

// withBase returns ctx carrying base, the service's base URL.
func withBase(ctx context.Context, base string) context.Context {
	return context.WithValue(ctx, baseKey{}, base)
}

// baseOf returns the service's base URL ctx carries, or "".
func baseOf(ctx context.Context) string {
	base, _ := ctx.Value(baseKey{}).(string)
	return base
}

func signInURL(ctx context.Context, server string) string {
	base := baseOf(ctx)
	if base == "" {
		return ""
	}
	return base + "/oauth/start/" + url.PathEscape(server)
}

// progressEmitter relays a call's progress to the client as
// notifications/progress with the client's token; nil when the client
// gave none. Progress only grows: a report that does not is dropped.
func (e *Endpoint) progressEmitter(ctx context.Context, req mcp.CallToolRequest) tools.Emitter {
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return nil
	}
	token := req.Params.Meta.ProgressToken
	var mu sync.Mutex
	last, steps := -1.0, 0.0
	return tools.EmitterFunc(func(ev tools.Event) {
		params := map[string]any{"progressToken": token}
		mu.Lock()
		switch p := ev.Payload.(type) {
		case tools.ProgressPayload:
			if p.Progress <= last {
				mu.Unlock()
				return
			}
			last = p.Progress
			params["progress"] = p.Progress
			if p.Total != nil {
				params["total"] = *p.Total
			}
			if p.Message != "" {
				params["message"] = p.Message
			}
		case tools.StatusPayload:
			if ev.Type != tools.EventStatus || last >= 0 {
				mu.Unlock()
				return
			}
			steps++
			params["progress"] = steps
			params["message"] = p.Text
		default:
			mu.Unlock()
			return
		}
		mu.Unlock()
		e.hub.Notify(ctx, string(mcp.MethodNotificationProgress), params)
	})
}
