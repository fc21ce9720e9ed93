package mcpgateway

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// countingSampler answers every request that reaches the model, counting
// them; wait, when set, is called first.
type countingSampler struct {
	mu   sync.Mutex
	n    int
	wait func(ctx context.Context)
}

func (s *countingSampler) Sample(ctx context.Context, req session.SampleRequest) (session.SampleResult, error) {
	s.mu.Lock()
	s.n++
	s.mu.Unlock()
	if s.wait != nil {
		s.wait(ctx)
	}
	return session.SampleResult{Text: "fine", Model: "counted"}, ctx.Err()
}

func (s *countingSampler) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// hostileSampling returns a gateway of the hostile server in mode with
// "sampling": "auto" and edit applied, and the model it may use.
func hostileSampling(t *testing.T, mode string, edit func(*mcpconfig.ServerConfig)) (*Gateway, *countingSampler) {
	t.Helper()
	cfg := hostileConfig(t, mode)
	cfg.Sampling = mcpconfig.SamplingAuto
	if edit != nil {
		edit(&cfg)
	}
	model := &countingSampler{}
	return newGateway(t, cfg, &Options{Sampler: model}), model
}

// sampleOutcomes runs the hostile server's sample tool and returns one
// line per sampling request it made.
func sampleOutcomes(t *testing.T, g *Gateway, inputs map[string]any) []string {
	t.Helper()
	cr, err := g.Execute(t.Context(), "sample", inputs)
	if err != nil || cr.IsError {
		t.Fatalf("sample %v: %v %+v", inputs, err, cr)
	}
	return strings.Split(cr.Text(), "\n")
}

// assertOutcomes fails t unless the first ok lines are answers and the
// rest refusals saying want.
func assertOutcomes(t *testing.T, lines []string, ok int, want string) {
	t.Helper()
	for i, l := range lines {
		switch {
		case i < ok && !strings.HasPrefix(l, "ok: fine"):
			t.Errorf("request %d: %.200q, want it answered", i+1, l)
		case i >= ok && (!strings.HasPrefix(l, "error: ") || !strings.Contains(l, want)):
			t.Errorf("request %d: %.200q, want it refused saying %q", i+1, l, want)
		}
	}
}

// TestSamplingNeedsACallInFlight: a server that asks for sampling when no
// call of a user is in flight (here, right after the handshake) is refused,
// and the model is not asked.
func TestSamplingNeedsACallInFlight(t *testing.T) {
	g, model := hostileSampling(t, "sample-at-start", nil)
	cr, err := g.Execute(t.Context(), "early", nil)
	if err != nil {
		t.Fatal(err)
	}
	assertOutcomes(t, []string{cr.Text()}, 0, "no tools/call of a user is in flight")
	if n := model.count(); n != 0 {
		t.Errorf("the model was asked %d times with no call in flight", n)
	}
	// During a call, the same server may.
	assertOutcomes(t, sampleOutcomes(t, g, map[string]any{"n": 1, "size": 10}), 1, "")
}

// TestSamplingCapPerCall: one call lets the server ask the model at most
// sampling_per_call times (default 5); the next call may again.
func TestSamplingCapPerCall(t *testing.T) {
	g, model := hostileSampling(t, "", nil)
	assertOutcomes(t, sampleOutcomes(t, g, map[string]any{"n": 7, "size": 10}), 5, "5 sampling requests per tool call (sampling_per_call)")
	assertOutcomes(t, sampleOutcomes(t, g, map[string]any{"n": 1, "size": 10}), 1, "")
	if n := model.count(); n != 6 {
		t.Errorf("the model was asked %d times, want 6", n)
	}
}

// TestSamplingCapPerMinute: the server may ask at most sampling_per_minute
// times a minute, over all calls.
func TestSamplingCapPerMinute(t *testing.T) {
	g, model := hostileSampling(t, "", func(cfg *mcpconfig.ServerConfig) { cfg.SamplingPerMinute = 3 })
	assertOutcomes(t, sampleOutcomes(t, g, map[string]any{"n": 2, "size": 10}), 2, "")
	assertOutcomes(t, sampleOutcomes(t, g, map[string]any{"n": 3, "size": 10}), 1, "3 sampling requests per minute (sampling_per_minute)")
	if n := model.count(); n != 3 {
		t.Errorf("the model was asked %d times, want 3", n)
	}
}

// TestSamplingCapInput: a request whose messages and system prompt are over
// sampling_max_input (default 64 KiB) is refused.
func TestSamplingCapInput(t *testing.T) {
	g, model := hostileSampling(t, "", nil)
	assertOutcomes(t, sampleOutcomes(t, g, map[string]any{"n": 1, "size": 70 << 10}), 0, "over the 64 KiB limit (sampling_max_input)")
	assertOutcomes(t, sampleOutcomes(t, g, map[string]any{"n": 1, "size": 60 << 10, "system": strings.Repeat("s", 8<<10)}), 0, "over the 64 KiB limit")
	assertOutcomes(t, sampleOutcomes(t, g, map[string]any{"n": 1, "size": 60 << 10}), 1, "")
	if n := model.count(); n != 1 {
		t.Errorf("the model was asked %d times, want 1", n)
	}
}

// TestSamplingEndsWithTheCall: the model's work for a server ends when the
// call that allowed it does (here, at call_timeout), not when the session
// does.
func TestSamplingEndsWithTheCall(t *testing.T) {
	ended := make(chan struct{})
	g, model := hostileSampling(t, "", func(cfg *mcpconfig.ServerConfig) { cfg.CallTimeout = 500 * time.Millisecond })
	model.wait = func(ctx context.Context) {
		<-ctx.Done()
		close(ended)
	}
	if _, err := g.Execute(t.Context(), "sample", map[string]any{"n": 1, "size": 10}); err == nil {
		t.Fatal("the call did not time out")
	}
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the model is still working for a call that ended")
	}
}

// TestSamplingWindowSharedByUsers: the users' sessions of a per-user
// server share the server's per-minute cap: what alice's calls took counts
// against bob's.
func TestSamplingWindowSharedByUsers(t *testing.T) {
	g, model := hostileSampling(t, "", func(cfg *mcpconfig.ServerConfig) { cfg.PerUser, cfg.SamplingPerMinute = true, 3 })
	sample := func(user string, n int) []string {
		t.Helper()
		cr, err := g.Execute(WithUser(t.Context(), user), "sample", map[string]any{"n": n, "size": 10})
		if err != nil || cr.IsError {
			t.Fatalf("%s: %v %+v", user, err, cr)
		}
		return strings.Split(cr.Text(), "\n")
	}
	assertOutcomes(t, sample("alice", 2), 2, "")
	assertOutcomes(t, sample("bob", 2), 1, "3 sampling requests per minute (sampling_per_minute)")
	if n := model.count(); n != 3 {
		t.Errorf("the model was asked %d times, want 3", n)
	}
}
