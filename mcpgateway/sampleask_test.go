package mcpgateway

import (
	"strings"
	"testing"
	"time"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

// sampleAsked runs the hostile server's sample tool once for a user who
// answers as answer says, and returns the outcome line and the user's
// stream.
func sampleAsked(t *testing.T, g *Gateway, answer func(q tools.Question) tools.Answer) (string, *userStream) {
	t.Helper()
	u := &userStream{answer: answer}
	res := run(t, g, u, "sample", map[string]any{"n": 1, "size": 10, "system": "twelve chars"})
	return strings.TrimSpace(res.LLMText), u
}

// TestSamplingAsk: with "sampling": "ask" the user sees the request
// (messages, system prompt, max tokens) before the model is asked and the
// reply before it goes back; an edited reply goes back instead; a denial at
// either stage is an error to the server saying the user declined.
func TestSamplingAsk(t *testing.T) {
	g, model := hostileSampling(t, "", func(cfg *mcpconfig.ServerConfig) { cfg.Sampling = mcpconfig.SamplingAsk })

	out, u := sampleAsked(t, g, func(q tools.Question) tools.Answer {
		if q.Payload.Sampling != nil && q.Payload.Sampling.Stage == tools.SamplingReply {
			return tools.Answer{Action: tools.ElicitAccept, Content: map[string]any{"reply": "edited by the user"}}
		}
		return tools.Answer{Action: tools.ElicitAccept}
	})
	if !strings.Contains(out, "ok: edited by the user") {
		t.Errorf("outcome %q, want the edited reply", out)
	}
	if len(u.asked) != 2 {
		t.Fatalf("asked %d questions, want 2 (the request, then the reply)", len(u.asked))
	}
	req, rep := u.asked[0].Payload, u.asked[1].Payload
	if req.Mode != tools.ElicitSampling || req.Sampling == nil || req.Sampling.Stage != tools.SamplingRequest ||
		req.Sampling.SystemPrompt != strings.Repeat("s", 12) || req.Sampling.MaxTokens != 10 || len(req.Sampling.Messages) != 1 ||
		req.Sampling.Messages[0].Text != "xxxxxxxxxx" || req.Sampling.Messages[0].Role != "user" || req.Server != "hostile" || req.Tool != "sample" {
		t.Errorf("the first question = %+v %+v, want the request", req, req.Sampling)
	}
	if rep.Sampling == nil || rep.Sampling.Stage != tools.SamplingReply || rep.Sampling.Reply != "fine" || rep.Sampling.Model != "counted" {
		t.Errorf("the second question = %+v, want the model's reply", rep.Sampling)
	}

	// Denied before the model is asked: the model never works.
	before := model.count()
	out, _ = sampleAsked(t, g, func(tools.Question) tools.Answer { return tools.Answer{Action: tools.ElicitDecline} })
	if !strings.HasPrefix(out, "error: ") || !strings.Contains(out, "the user declined") {
		t.Errorf("denied request: outcome %q, want an error saying the user declined", out)
	}
	if n := model.count(); n != before {
		t.Errorf("the model was asked after the user denied the request")
	}

	// Denied after the reply: the reply never goes back.
	out, _ = sampleAsked(t, g, func(q tools.Question) tools.Answer {
		if q.Payload.Sampling.Stage == tools.SamplingReply {
			return tools.Answer{Action: tools.ElicitCancel}
		}
		return tools.Answer{Action: tools.ElicitAccept}
	})
	if !strings.HasPrefix(out, "error: ") || !strings.Contains(out, "the user declined") || strings.Contains(out, "fine") {
		t.Errorf("denied reply: outcome %q, want an error saying the user declined", out)
	}
}

// TestSamplingAskNeedsAUser: "ask" with no interactive user (a call through
// the API) refuses, saying why, and the model is not asked; an Asker that
// cannot ask (no terminal) refuses with its reason.
func TestSamplingAskNeedsAUser(t *testing.T) {
	g, model := hostileSampling(t, "", func(cfg *mcpconfig.ServerConfig) { cfg.Sampling = mcpconfig.SamplingAsk })
	assertOutcomes(t, sampleOutcomes(t, g, map[string]any{"n": 1, "size": 10}), 0, `no interactive user to approve it ("sampling": "ask"`)
	out, _ := sampleAsked(t, g, func(tools.Question) tools.Answer {
		return tools.Answer{Action: tools.ElicitDecline, Reason: "no terminal to ask on"}
	})
	if !strings.Contains(out, "no terminal to ask on") {
		t.Errorf("outcome %q, want the Asker's reason", out)
	}
	if n := model.count(); n != 0 {
		t.Errorf("the model was asked %d times with no one to approve", n)
	}
}

// TestSamplingAutoShowsTheRequest: "auto" answers unattended and the
// call's stream gets a line with the request and the reply, masked.
func TestSamplingAutoShowsTheRequest(t *testing.T) {
	g, _ := hostileSampling(t, "", func(cfg *mcpconfig.ServerConfig) {
		cfg.Secrets = []string{strings.Repeat("s", 12)}
	})
	out, u := sampleAsked(t, g, func(tools.Question) tools.Answer {
		t.Error("auto asked the user")
		return tools.Answer{Action: tools.ElicitDecline}
	})
	if !strings.Contains(out, "ok: fine") {
		t.Errorf("outcome %q", out)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	var got *tools.SamplingPayload
	for _, ev := range u.events {
		if p, ok := ev.Payload.(tools.SamplingPayload); ok && ev.Type == tools.EventStatus {
			got = &p
		}
	}
	if got == nil {
		t.Fatalf("no status event with the sampling request in %+v", u.events)
	}
	if got.Stage != tools.SamplingDone || got.Reply != "fine" || len(got.Messages) != 1 || got.Messages[0].Text != "xxxxxxxxxx" ||
		got.MaxTokens != 10 || got.Text == "" || strings.Contains(got.SystemPrompt, "ssss") {
		t.Errorf("status payload %+v, want the request (system prompt masked) and the reply", got)
	}
}

// TestSamplingAskHoldsTheCallTimeout: the time the user takes to approve
// does not count against call_timeout (max_call_time still bounds it).
func TestSamplingAskHoldsTheCallTimeout(t *testing.T) {
	g, _ := hostileSampling(t, "", func(cfg *mcpconfig.ServerConfig) {
		cfg.Sampling = mcpconfig.SamplingAsk
		cfg.CallTimeout = 300 * time.Millisecond
		cfg.MaxCallTime = time.Minute
	})
	out, _ := sampleAsked(t, g, func(q tools.Question) tools.Answer {
		time.Sleep(500 * time.Millisecond) // the user reads the request, longer than call_timeout
		return tools.Answer{Action: tools.ElicitAccept}
	})
	if !strings.Contains(out, "ok: fine") {
		t.Errorf("outcome %q, want the reply after a slow approval", out)
	}
}
