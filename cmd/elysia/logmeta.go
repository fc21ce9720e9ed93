package main

import (
	"context"
	"log/slog"

	"github.com/elysia-go/elysia/mcpendpoint"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/web"
)

// requestMetaHandler fills in the request metadata a log record leaves
// empty, from the record's ctx: a gateway called through the API (POST
// /api/servers/:name/execute) logs its call under request_id and user, but
// has only a ctx to know them by, in which web put the request id and the
// key's user. Records that carry their own values keep them.
type requestMetaHandler struct{ slog.Handler }

func (h requestMetaHandler) Handle(ctx context.Context, r slog.Record) error {
	requestID, user := web.RequestID(ctx), web.Principal(ctx)
	if sid := mcpendpoint.SessionID(ctx); sid != "" { // a call through the aggregate MCP endpoint
		r = r.Clone()
		r.AddAttrs(slog.String("mcp_session", sid))
		if user == "" {
			user = mcpgateway.UserFrom(ctx) // stdio: no web request
		}
	}
	if requestID == "" && user == "" {
		return h.Handler.Handle(ctx, r)
	}
	// fill is the value an empty request_id or user attribute takes.
	fill := func(a slog.Attr) string {
		if a.Value.Kind() != slog.KindString || a.Value.String() != "" {
			return ""
		}
		switch a.Key {
		case "request_id":
			return requestID
		case "user":
			return user
		}
		return ""
	}
	missing := false
	r.Attrs(func(a slog.Attr) bool {
		missing = fill(a) != ""
		return !missing
	})
	if !missing {
		return h.Handler.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if v := fill(a); v != "" {
			a.Value = slog.StringValue(v)
		}
		out.AddAttrs(a)
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h requestMetaHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return requestMetaHandler{h.Handler.WithAttrs(as)}
}

func (h requestMetaHandler) WithGroup(name string) slog.Handler {
	return requestMetaHandler{h.Handler.WithGroup(name)}
}
