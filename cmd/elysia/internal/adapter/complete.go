package adapter

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/elysia-go/elysia/web"
)

var _ web.ServerCompleter = Servers{}

// Complete implements web.ServerCompleter: completion/complete for an
// argument of a server's prompt or resource template, as the user types.
func (a Servers) Complete(ctx context.Context, name string, req web.CompleteRequest) (web.Completion, error) {
	g, err := a.gateway(name)
	if err != nil {
		return web.Completion{}, err
	}
	res, err := completeWith(forUser(ctx), g.Complete, req)
	if err != nil {
		return web.Completion{}, gatewayErr(g, err)
	}
	return res, nil
}

// completeWith calls complete, the gateway's Complete, with req. Its
// argument, context and answer are mcp-go's types, which stay inside
// mcpgateway (depguard): they are filled from web's by their JSON, which is
// MCP's on both sides, and the reference goes as web's CompleteRef, which
// marshals as MCP's ref/prompt or ref/resource.
func completeWith[A, C, R any](ctx context.Context, complete func(context.Context, any, A, C) (R, error), req web.CompleteRequest) (web.Completion, error) {
	var (
		arg  A
		cctx C
		out  struct {
			Values  []string `json:"values"`
			Total   int      `json:"total"`
			HasMore bool     `json:"hasMore"`
		}
	)
	if err := recode(req.Argument, &arg); err != nil {
		return web.Completion{}, err
	}
	if err := recode(req.Context, &cctx); err != nil {
		return web.Completion{}, err
	}
	res, err := complete(ctx, req.Ref, arg, cctx)
	if err != nil {
		return web.Completion{}, err
	}
	if err := recode(res, &out); err != nil {
		return web.Completion{}, err
	}
	return web.Completion{Values: out.Values, Total: out.Total, HasMore: out.HasMore}, nil
}

// recode copies from into to through JSON.
func recode(from, to any) error {
	b, err := json.Marshal(from)
	if err == nil {
		err = json.Unmarshal(b, to)
	}
	if err != nil {
		return fmt.Errorf("completion: carry %T as %T: %w", from, to, err)
	}
	return nil
}
