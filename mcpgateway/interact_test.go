package mcpgateway

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

// userStream stands for one user's query stream: it records the events a
// call emits and answers questions with answer (nil: it is not an Asker).
type userStream struct {
	mu     sync.Mutex
	events []tools.Event
	asked  []tools.Question
	answer func(q tools.Question) tools.Answer
}

func (u *userStream) Emit(ev tools.Event) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.events = append(u.events, ev)
}

func (u *userStream) Ask(_ context.Context, q tools.Question) (tools.Answer, error) {
	u.mu.Lock()
	u.asked = append(u.asked, q)
	u.mu.Unlock()
	ans := u.answer(q)
	if ans.Action == tools.ElicitAccept && q.Check != nil {
		content, err := q.Check(ans.Content)
		if err != nil {
			return tools.Answer{}, err
		}
		ans.Content = content
	}
	return ans, nil
}

func (u *userStream) progress() []tools.ProgressPayload {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []tools.ProgressPayload
	for _, ev := range u.events {
		if p, ok := ev.Payload.(tools.ProgressPayload); ok {
			out = append(out, p)
		}
	}
	return out
}

// everythingCases are server-everything over stdio and Streamable HTTP,
// with the settings the server-initiated messages need.
func everythingCases(t *testing.T, edit func(*mcpconfig.ServerConfig)) map[string]func(*testing.T) mcpconfig.ServerConfig {
	t.Helper()
	return map[string]func(*testing.T) mcpconfig.ServerConfig{
		"stdio": func(t *testing.T) mcpconfig.ServerConfig {
			t.Helper()
			cfg := everythingStdio(t)
			edit(&cfg)
			return cfg
		},
		"http": func(t *testing.T) mcpconfig.ServerConfig {
			t.Helper()
			cfg := mcpconfig.ServerConfig{Name: "everything", Transport: mcpconfig.TransportHTTP, URL: testenv.EverythingHTTP(t, "streamableHttp"), Enabled: true}
			edit(&cfg)
			return cfg
		},
	}
}

func run(t *testing.T, g *Gateway, u tools.Emitter, tool string, inputs map[string]any) tools.Result {
	t.Helper()
	res, err := g.Run(t.Context(), tools.Call{UserID: "alice", Args: map[string]any{"action": "execute", "tool_name": tool, "tool_inputs": inputs}}, u)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

func TestServerInitiatedMessages(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	cases := everythingCases(t, func(cfg *mcpconfig.ServerConfig) {
		cfg.Sampling = mcpconfig.SamplingAuto
		cfg.Roots = []string{filepath.Join(root, "project")}
	})
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			g := newGateway(t, mk(t), &Options{Sampler: samplerFunc(func(_ context.Context, req session.SampleRequest) (session.SampleResult, error) {
				return session.SampleResult{Text: "sampled: " + req.Messages[len(req.Messages)-1].Text, Model: "scripted"}, nil
			})})
			infos, err := g.List(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"trigger-elicitation-request", "trigger-sampling-request", "get-roots-list"} {
				if !strings.Contains(strings.Join(toolNames(infos), ","), want) {
					t.Errorf("%s is not listed: the client capabilities were not declared", want)
				}
			}

			t.Run("progress", func(t *testing.T) {
				u := &userStream{}
				res := run(t, g, u, "trigger-long-running-operation", map[string]any{"duration": 0.5, "steps": 5})
				if res.IsError {
					t.Fatalf("result %+v", res)
				}
				// A report every 100 ms: ProgressInterval may coalesce two.
				ps := u.progress()
				if len(ps) == 0 || len(ps) > 5 || ps[len(ps)-1].Progress != 5 {
					t.Fatalf("%d progress events, want up to 5, the last 5 of 5: %+v", len(ps), ps)
				}
				for i, p := range ps {
					if p.CallID == "" || p.CallID != ps[0].CallID {
						t.Errorf("progress %d has call id %q, want the call's own, %q", i, p.CallID, ps[0].CallID)
					}
					if (i > 0 && p.Progress <= ps[i-1].Progress) || p.Total == nil || *p.Total != 5 || p.Tool != "trigger-long-running-operation" || p.Server != "everything" {
						t.Errorf("progress %d = %+v", i, p)
					}
				}
			})

			t.Run("elicitation accepted with defaults", func(t *testing.T) {
				u := &userStream{answer: func(tools.Question) tools.Answer {
					return tools.Answer{Action: tools.ElicitAccept, Content: map[string]any{"name": "Ada Lovelace"}}
				}}
				res := run(t, g, u, "trigger-elicitation-request", nil)
				if len(u.asked) != 1 || u.asked[0].Payload.Tool != "trigger-elicitation-request" || u.asked[0].Payload.Mode != "form" {
					t.Fatalf("asked %+v", u.asked)
				}
				text := res.LLMText
				for _, want := range []string{"Ada Lovelace", "It was a dark and stormy night.", "42"} {
					if !strings.Contains(text, want) {
						t.Errorf("result %q lacks %q (the answer, with the schema's defaults)", text, want)
					}
				}
			})

			t.Run("elicitation declined without an interactive user", func(t *testing.T) {
				res := run(t, g, tools.Discard, "trigger-elicitation-request", nil)
				if !strings.Contains(strings.ToLower(res.LLMText+res.Feedback), "decline") {
					t.Errorf("result %+v, want the server to report a decline", res)
				}
			})

			t.Run("sampling", func(t *testing.T) {
				res := run(t, g, &userStream{}, "trigger-sampling-request", map[string]any{"prompt": "write a haiku", "maxTokens": 10_000_000})
				if !strings.Contains(res.LLMText, "sampled: ") || !strings.Contains(res.LLMText, "write a haiku") {
					t.Errorf("result %q, want the scripted model's answer", res.LLMText)
				}
			})

			t.Run("roots", func(t *testing.T) {
				res := run(t, g, &userStream{}, "get-roots-list", nil)
				if !strings.Contains(res.LLMText, "file://"+filepath.ToSlash(filepath.Join(root, "project"))) {
					t.Errorf("result %q, want the configured root", res.LLMText)
				}
			})

			t.Run("task with a question", func(t *testing.T) {
				infos, err := g.List(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				if i := slices.IndexFunc(infos, func(ti ToolInfo) bool { return ti.Name == "simulate-research-query" }); i < 0 || infos[i].TaskSupport != "required" {
					t.Errorf("simulate-research-query listed without taskSupport required: %+v", infos)
				}
				u := &userStream{answer: func(tools.Question) tools.Answer {
					return tools.Answer{Action: tools.ElicitAccept, Content: map[string]any{"interpretation": "programming"}}
				}}
				res := run(t, g, u, "simulate-research-query", map[string]any{"topic": "python", "ambiguous": true})
				if res.IsError || !strings.Contains(res.LLMText, "Research Report: python (programming)") {
					t.Fatalf("result %+v, want the report with the user's answer", res)
				}
				if len(u.asked) != 1 || u.asked[0].Payload.Tool != "simulate-research-query" {
					t.Errorf("asked %+v, want the task's one question", u.asked)
				}
				var msgs []string
				for _, p := range u.progress() {
					msgs = append(msgs, p.Message)
				}
				// Once the task waits for input, tasks/result carries the
				// question and then blocks until the task is done.
				if len(msgs) < 2 || msgs[0] != "Gathering sources..." || !slices.ContainsFunc(msgs, func(m string) bool {
					return strings.HasPrefix(m, "Found multiple interpretations")
				}) {
					t.Errorf("status messages %q, want the task's stages and its question", msgs)
				}
			})

			t.Run("roots changed in place", func(t *testing.T) {
				run(t, g, &userStream{}, "get-roots-list", nil) // the server has the old roots
				pid := g.Status().PID
				cfg := g.Config()
				cfg.Roots = append(slices.Clone(cfg.Roots), filepath.Join(root, "docs"))
				if !g.Adopt(cfg) {
					t.Fatal("Adopt refused a change of roots only")
				}
				// The server asks roots/list again on list_changed and logs
				// the count it received.
				t.Cleanup(func() {
					if t.Failed() {
						t.Logf("the server's log: %+v", g.Logs())
					}
				})
				testenv.WaitFor(t, 10*time.Second, "the server to re-read the roots", func() bool {
					return logged(g, "Roots updated: 2 root(s)")
				})
				res := run(t, g, &userStream{}, "get-roots-list", nil)
				if !strings.Contains(res.LLMText, "file://"+filepath.ToSlash(filepath.Join(root, "docs"))) {
					t.Errorf("result %q, want the added root", res.LLMText)
				}
				if g.Status().PID != pid {
					t.Errorf("the session was replaced (pid %d, then %d)", pid, g.Status().PID)
				}
				other := g.Config()
				other.Sampling = mcpconfig.SamplingOff
				if g.Adopt(other) {
					t.Error("Adopt took a change of sampling, which needs a new session")
				}
			})

			t.Run("resources and prompts", func(t *testing.T) {
				if !strings.Contains(g.Description(), "Also offers resources and prompts") {
					t.Errorf("description %q does not say what the server offers", g.Description())
				}
				res, err := g.Run(t.Context(), tools.Call{Args: map[string]any{"action": "list_resources"}}, tools.Discard)
				if err != nil || res.IsError || len(res.Objects) == 0 {
					t.Fatalf("list_resources = %v %+v", err, res)
				}
				uri, _ := res.Objects[0]["uri"].(string)
				res, err = g.Run(t.Context(), tools.Call{Args: map[string]any{"action": "read_resource", "uri": uri}}, tools.Discard)
				if err != nil || res.IsError || len(res.Objects) == 0 || res.Objects[0]["uri"] != uri {
					t.Errorf("read_resource %s = %v %+v", uri, err, res)
				}
				res, err = g.Run(t.Context(), tools.Call{Args: map[string]any{"action": "list_prompts"}}, tools.Discard)
				if err != nil || res.IsError || len(res.Objects) == 0 {
					t.Fatalf("list_prompts = %v %+v", err, res)
				}
				prompt, _ := res.Objects[0]["name"].(string)
				res, err = g.Run(t.Context(), tools.Call{Args: map[string]any{"action": "get_prompt", "name": prompt}}, tools.Discard)
				if err != nil || res.IsError || len(res.Objects) == 0 {
					t.Errorf("get_prompt %s = %v %+v", prompt, err, res)
				}
				res, err = g.Run(t.Context(), tools.Call{Args: map[string]any{"action": "read_resource"}}, tools.Discard)
				if err != nil || !res.IsError || !strings.Contains(res.Feedback, "uri is required") {
					t.Errorf("read_resource without uri = %v %+v", err, res)
				}
			})
		})
	}
}

// TestSamplingRefusedUnlessEnabled: without "sampling": true the server's
// request gets a clear refusal, and the model is never asked.
func TestSamplingRefusedUnlessEnabled(t *testing.T) {
	t.Parallel()
	asked := false
	g := newGateway(t, everythingStdio(t), &Options{Sampler: samplerFunc(func(context.Context, session.SampleRequest) (session.SampleResult, error) {
		asked = true
		return session.SampleResult{Text: "no"}, nil
	})})
	res := run(t, g, &userStream{}, "trigger-sampling-request", map[string]any{"prompt": "hi"})
	if asked || !strings.Contains(res.LLMText+res.Feedback, "sampling is not enabled") {
		t.Errorf("asked the model: %v; result %+v, want the refusal", asked, res)
	}
}

type samplerFunc func(context.Context, session.SampleRequest) (session.SampleResult, error)

func (f samplerFunc) Sample(ctx context.Context, req session.SampleRequest) (session.SampleResult, error) {
	return f(ctx, req)
}

// TestProgressExtendsTheDeadline runs an operation longer than call_timeout
// that reports progress more often than that: it completes; with
// max_call_time shorter than the operation it is ended by that bound.
func TestProgressExtendsTheDeadline(t *testing.T) {
	t.Parallel()
	cfg := everythingStdio(t)
	cfg.CallTimeout = 1500 * time.Millisecond
	g := newGateway(t, cfg, nil)
	op := map[string]any{"duration": 3, "steps": 6} // a report every 0.5 s, 3 s in all
	if res := run(t, g, &userStream{}, "trigger-long-running-operation", op); res.IsError {
		t.Fatalf("a call reporting progress ended before it finished: %+v", res)
	}

	cfg.MaxCallTime = 2 * time.Second
	g = newGateway(t, cfg, nil)
	res := run(t, g, &userStream{}, "trigger-long-running-operation", op)
	if !res.IsError || !strings.Contains(res.Error, "max_call_time 2s") {
		t.Errorf("result %+v, want it ended by max_call_time", res)
	}
}

// TestQuestionReachesOnlyTheAskingUser runs alice's call that asks a
// question while bob's call runs on the same session: bob is never asked.
// Over Streamable HTTP the question arrives on alice's call's own stream and
// reaches her; over stdio nothing tells the two calls apart, so it is
// declined rather than risk asking the wrong user.
func TestQuestionReachesOnlyTheAskingUser(t *testing.T) {
	t.Parallel()
	for name, mk := range everythingCases(t, func(*mcpconfig.ServerConfig) {}) {
		t.Run(name, func(t *testing.T) {
			g := newGateway(t, mk(t), nil)
			accept := func(tools.Question) tools.Answer {
				return tools.Answer{Action: tools.ElicitAccept, Content: map[string]any{"name": "Someone"}}
			}
			alice, bob := &userStream{answer: accept}, &userStream{answer: accept}
			bobDone := make(chan struct{})
			go func() {
				defer close(bobDone)
				run(t, g, bob, "trigger-long-running-operation", map[string]any{"duration": 2, "steps": 4})
			}()
			testenv.WaitFor(t, 10*time.Second, "bob's call to report progress", func() bool { return len(bob.progress()) > 0 })
			res := run(t, g, alice, "trigger-elicitation-request", nil)
			<-bobDone
			if len(bob.asked) != 0 {
				t.Fatalf("bob was asked alice's question: %+v", bob.asked)
			}
			switch name {
			case "http":
				if len(alice.asked) != 1 || !strings.Contains(res.LLMText, "Someone") {
					t.Errorf("alice asked %d times; result %q", len(alice.asked), res.LLMText)
				}
			default:
				if len(alice.asked) != 0 || !strings.Contains(strings.ToLower(res.LLMText), "decline") {
					t.Errorf("alice asked %d times; result %q, want a decline", len(alice.asked), res.LLMText)
				}
			}
		})
	}
}

// logged reports whether the server logged a message containing text.
func logged(g *Gateway, text string) bool {
	for _, e := range g.Logs() {
		if strings.Contains(e.Data, text) {
			return true
		}
	}
	return false
}

// TestTaskKeepsItsDeadlineWhileWaitingForTheUser: a task that waits for the
// user longer than call_timeout, then works on for longer still, is not cut
// off: while tasks/result waits, tasks/get goes on watching the task and
// moves the deadline on, up to max_call_time.
func TestTaskKeepsItsDeadlineWhileWaitingForTheUser(t *testing.T) {
	t.Parallel()
	cfg := everythingStdio(t)
	cfg.CallTimeout, cfg.MaxCallTime = 1500*time.Millisecond, time.Minute
	g := newGateway(t, cfg, nil)
	// The user answers once the question has outlived call_timeout (plus
	// a little, for the poll that would have been the last one): the
	// scenario itself, so the wait is derived from it and checked, not a
	// fixed guess.
	late := cfg.CallTimeout + 200*time.Millisecond
	var waited time.Duration
	u := &userStream{answer: func(tools.Question) tools.Answer {
		asked := time.Now()
		timer := time.NewTimer(late)
		defer timer.Stop()
		<-timer.C
		waited = time.Since(asked)
		return tools.Answer{Action: tools.ElicitAccept, Content: map[string]any{"interpretation": "historical"}}
	}}
	res := run(t, g, u, "simulate-research-query", map[string]any{"topic": "rome", "ambiguous": true})
	if res.IsError || !strings.Contains(res.LLMText, "rome (historical)") {
		t.Fatalf("result %+v, want the report with the late answer", res)
	}
	if waited <= cfg.CallTimeout {
		t.Fatalf("the user answered after %v, not after call_timeout %v: the test proves nothing", waited, cfg.CallTimeout)
	}
}

// TestTaskCancelledWithItsCall: a task whose call ends (the user stopped
// the query) is cancelled at the server with tasks/cancel, which the
// server accepts.
func TestTaskCancelledWithItsCall(t *testing.T) {
	t.Parallel()
	logs := &testenv.SyncBuffer{}
	g := newGateway(t, everythingStdio(t), &Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	ctx, cancel := context.WithCancel(t.Context())
	u := &stopAfterProgress{cancel: cancel}
	_, err := g.Run(ctx, tools.Call{UserID: "alice", Args: map[string]any{"action": "execute",
		"tool_name": "simulate-research-query", "tool_inputs": map[string]any{"topic": "go"}}}, u)
	if err == nil || ctx.Err() == nil {
		t.Fatalf("Run = %v with ctx %v, want the call stopped", err, ctx.Err())
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", logs.String())
		}
	})
	testenv.WaitFor(t, 10*time.Second, "the server to accept tasks/cancel", func() bool {
		return strings.Contains(logs.String(), "task cancelled")
	})
}

// stopAfterProgress cancels its call at the first status event.
type stopAfterProgress struct {
	once   sync.Once
	cancel context.CancelFunc
}

func (s *stopAfterProgress) Emit(ev tools.Event) {
	if _, ok := ev.Payload.(tools.ProgressPayload); ok {
		s.once.Do(s.cancel)
	}
}
