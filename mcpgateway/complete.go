package mcpgateway

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
)

// maxCompletionValues is the most values a completion carries, as the
// specification allows; a server's extra ones are dropped (HasMore set).
const maxCompletionValues = 100

// Complete asks the server for completions of an argument of a prompt or
// resource template (completion/complete), with ref the server's own
// mcp.PromptReference or mcp.ResourceReference. A request is admitted and
// bounded like any other (call_timeout, the circuit).
func (g *Gateway) Complete(ctx context.Context, ref any, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	var out *mcp.Completion
	err := g.request(ctx, "completion/complete", func(ctx context.Context, s *session.Session) error {
		req := mcp.CompleteRequest{}
		req.Params.Ref, req.Params.Argument, req.Params.Context = ref, arg, cctx
		res, err := s.Client().Complete(ctx, req)
		if err != nil {
			return err
		}
		c := res.Completion
		if len(c.Values) > maxCompletionValues {
			c.Values, c.HasMore = c.Values[:maxCompletionValues], true
		}
		if c.Values == nil {
			c.Values = []string{}
		}
		out = &c
		return nil
	})
	return out, err
}
