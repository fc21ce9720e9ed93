package mcpendpoint

import (
	"context"
	"fmt"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpendpoint/internal/content"
	"github.com/elysia-go/elysia/mcpendpoint/internal/jsonrpc"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/tools"
)

// Resourceful is an Upstream that also passes on its server's resources,
// resource templates and prompts; *mcpgateway.Gateway is one. An Upstream
// that is not lists none.
type Resourceful interface {
	ListResources(ctx context.Context) ([]mcpgateway.ResourceInfo, error)
	ReadResource(ctx context.Context, uri string) (*mcpgateway.CallResult, error)
	ListPrompts(ctx context.Context) ([]mcpgateway.PromptInfo, error)
	// GetPromptFor gets a prompt; its server's questions meanwhile go to
	// emit as a tool call's do.
	GetPromptFor(ctx context.Context, name string, args map[string]string, emit tools.Emitter) ([]mcpgateway.PromptMessage, error)
}

// Names of what the endpoint registers with mcp-go to receive every
// resources/read and prompts/get: the hooks replace the lists.
const (
	routerTemplate = "{+uri}"
	routerPrompt   = "elysia.route"
)

// perServer runs f for every enabled Resourceful upstream at once (at
// most 8 at a time), each bounded by ListTimeout, for ctx's user, and
// returns their results in file order; a server that fails is left out
// with a log line.
func perServer[T any](e *Endpoint, ctx context.Context, what string, f func(context.Context, Resourceful) (T, error)) []serverResult[T] {
	user := mcpgateway.UserFrom(ctx)
	ctx = mcpgateway.WithUser(ctx, user)
	ups := e.src.Upstreams()
	out := make([]serverResult[T], len(ups))
	rs := make([]Resourceful, len(ups))
	for i, up := range ups {
		if r, ok := up.(Resourceful); ok && up.Config().Enabled {
			rs[i] = r
			out[i].server, out[i].up = up.Config().Name, up
		}
	}
	e.eachServer(ctx, len(ups), func(lctx context.Context, i int) {
		if rs[i] == nil {
			return
		}
		v, err := f(lctx, rs[i])
		if err != nil {
			if ctx.Err() == nil && !isSignIn(err) {
				e.logger.Warn("aggregate endpoint: server's "+what+" left out of the list", logKeyServer, out[i].server,
					logKeyUser, user, logKeyErr, err.Error())
			}
			return
		}
		out[i].v, out[i].ok = v, true
	})
	return out
}

// serverResult is one server's part of a listing.
type serverResult[T any] struct {
	server string
	up     Upstream
	v      T
	ok     bool
}

// resources returns the resources and templates ctx's user is listed,
// each with the server it goes to: a URI (or template) two servers list
// goes to the first in file order, with a warning when warn is set.
func (e *Endpoint) resources(ctx context.Context, warn bool) (res []mcp.Resource, tmpls []mcp.ResourceTemplate, owner map[string]Resourceful, tmplOwner []Resourceful) {
	lists := perServer(e, ctx, "resources", func(ctx context.Context, r Resourceful) ([]mcpgateway.ResourceInfo, error) {
		return r.ListResources(ctx)
	})
	owner, seen := map[string]Resourceful{}, map[string]string{}
	for _, l := range lists {
		for _, ri := range l.v {
			key := ri.URI
			if key == "" {
				key = "template:" + ri.URITemplate
			}
			if first, dup := seen[key]; dup {
				if warn && first != l.server {
					e.logger.Warn("aggregate endpoint: resource listed by two servers goes to the first", "uri", key,
						logKeyServer, first, "shadowed", l.server)
				}
				continue
			}
			seen[key] = l.server
			if ri.URI != "" {
				owner[ri.URI] = l.up.(Resourceful)
				res = append(res, mcp.Resource{URI: ri.URI, Name: ri.Name, Description: ri.Description, MIMEType: ri.MIMEType})
				continue
			}
			t := mcp.NewResourceTemplate(ri.URITemplate, ri.Name, mcp.WithTemplateDescription(ri.Description), mcp.WithTemplateMIMEType(ri.MIMEType))
			if t.URITemplate == nil || t.URITemplate.Template == nil {
				continue // not a URI template: nothing could be read through it
			}
			tmpls = append(tmpls, t)
			tmplOwner = append(tmplOwner, l.up.(Resourceful))
		}
	}
	return res, tmpls, owner, tmplOwner
}

// afterListResources lists every server's resources for ctx's user.
func (e *Endpoint) afterListResources(ctx context.Context, _ any, _ *mcp.ListResourcesRequest, res *mcp.ListResourcesResult) {
	list, _, _, _ := e.resources(ctx, true)
	res.Resources, res.NextCursor = append([]mcp.Resource{}, list...), ""
}

// afterListResourceTemplates lists every server's resource templates.
func (e *Endpoint) afterListResourceTemplates(ctx context.Context, _ any, _ *mcp.ListResourceTemplatesRequest, res *mcp.ListResourceTemplatesResult) {
	_, tmpls, _, _ := e.resources(ctx, true)
	res.ResourceTemplates, res.NextCursor = append([]mcp.ResourceTemplate{}, tmpls...), ""
}

// resourceOwner returns the server that lists uri for ctx's user, or else
// the first whose template matches it, and its name; nil and "" when none.
func (e *Endpoint) resourceOwner(ctx context.Context, uri string) (Resourceful, string) {
	_, tmpls, owner, tmplOwner := e.resources(ctx, false)
	r := owner[uri]
	for i := 0; r == nil && i < len(tmpls); i++ {
		if tmpls[i].URITemplate.Regexp().MatchString(uri) {
			r = tmplOwner[i]
		}
	}
	if up, ok := r.(Upstream); ok {
		return r, up.Config().Name
	}
	return r, ""
}

// readResource reads a URI from the server that lists it, or else the
// first whose template matches it.
func (e *Endpoint) readResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	r, _ := e.resourceOwner(ctx, uri)
	if r == nil {
		return nil, fmt.Errorf("no server of this service lists resource %q: %w", uri, mcpserver.ErrResourceNotFound)
	}
	res, err := r.ReadResource(mcpgateway.WithUser(ctx, mcpgateway.UserFrom(ctx)), uri)
	if err != nil {
		return nil, err
	}
	out := make([]mcp.ResourceContents, 0, len(res.Content))
	for _, item := range res.Content {
		if em, ok := content.Item(item).(mcp.EmbeddedResource); ok {
			out = append(out, em.Resource)
		}
	}
	return out, nil
}

// serveUnknownResource answers q when it is a 2026-07-28 resources/read of
// a URI no server of the service lists: -32602 with the URI in the
// error's data (SEP-2164). mcp-go would send the router's error as an
// internal one (-32603). Anything else, a request whose Mcp-Name or _meta
// does not match its body among them, is left to mcp-go, with the body
// as it was.
func (e *Endpoint) serveUnknownResource(w http.ResponseWriter, q *request) bool {
	var p struct {
		URI string `json:"uri"`
	}
	uri := q.R.Header.Get(mcp.HeaderName)
	if !q.Msg.IsRequest() || q.Msg.DecodeParams(&p) != nil || uri == "" || p.URI != uri ||
		q.Msg.Meta().ProtocolVersion != q.R.Header.Get(mcp.HeaderProtocolVersion) {
		return false
	}
	if owner, _ := e.resourceOwner(q.R.Context(), uri); owner != nil {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(jsonrpc.ErrorResponse(q.Msg.ID, mcp.INVALID_PARAMS,
		fmt.Sprintf("no server of this service lists resource %q", uri), map[string]string{"uri": uri})) // a client gone: nothing to tell
	return true
}
