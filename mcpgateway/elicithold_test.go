package mcpgateway

import (
	"strings"
	"testing"
	"time"

	"github.com/elysia-go/elysia/tools"
)

// TestElicitationHoldsTheCallTimeout: the user's time to answer a server's
// question is not the server's: a call whose call_timeout is shorter than
// the user's answer still gets the answer through (elicitation_timeout
// bounds the wait, max_call_time the call), as for a sampling approval.
func TestElicitationHoldsTheCallTimeout(t *testing.T) {
	cfg := everythingStdio(t)
	cfg.CallTimeout = 300 * time.Millisecond
	cfg.MaxCallTime = time.Minute
	g := newGateway(t, cfg, nil)
	u := &userStream{answer: func(tools.Question) tools.Answer {
		time.Sleep(3 * cfg.CallTimeout) // the user reads the form, longer than call_timeout
		return tools.Answer{Action: tools.ElicitAccept, Content: map[string]any{"name": "Ada Lovelace"}}
	}}
	res := run(t, g, u, "trigger-elicitation-request", nil)
	if !strings.Contains(res.LLMText, "Ada Lovelace") {
		t.Errorf("result %+v, want the answer after a slow user", res)
	}
}
