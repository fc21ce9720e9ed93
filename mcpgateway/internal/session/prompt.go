package session

import (
	"context"
	"math"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/tools"
)

// GetPrompt sends req, a prompts/get, on s for user. The server's questions
// while it answers (the input_required rounds of a 2026-07-28 server, an
// earlier server's requests) go to emit as a call's do (CallTool), under
// the prompt's name; a nil emit declines them.
func (c *Conn) GetPrompt(ctx context.Context, s *Session, req mcp.GetPromptRequest, user string, emit tools.Emitter) (*mcp.GetPromptResult, error) {
	clock := c.progressCtx(ctx)
	defer clock.stop()
	cctx := clock.ctx
	if emit == nil {
		emit = tools.Discard
	}
	ac := &activeCall{token: c.progressToken(), server: c.cfg.Name, tool: "prompt " + req.Params.Name,
		progress: math.Inf(-1), user: user, emit: emit, clock: clock, relay: newRelay(emit)}
	defer ac.relay.close()
	defer s.track(ac)()
	stop := s.WedgeGuard(cctx, "prompt "+req.Params.Name)
	res, err := s.client.GetPrompt(withInputRound(withCall(cctx, ac)), req)
	stop()
	if err != nil {
		return nil, c.timedOut(ctx, cctx, err)
	}
	return res, nil
}
