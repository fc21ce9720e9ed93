package tree

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elysia-go/elysia/tools"
)

// reportingTool emits n progress reports for each of its calls, the calls
// interleaved (two servers whose calls have the same id), and one plain
// status line.
type reportingTool struct{ n int }

func (reportingTool) Name() string          { return "report" }
func (reportingTool) Description() string   { return "reports progress" }
func (reportingTool) EndsRun() bool         { return false }
func (reportingTool) Inputs() []tools.Input { return nil }

func (r reportingTool) Run(ctx context.Context, _ tools.Call, emit tools.Emitter) (tools.Result, error) {
	emit.Emit(tools.NewStatus("starting"))
	for i := 1; i <= r.n; i++ {
		for _, server := range []string{"a", "b"} {
			emit.Emit(tools.Event{Type: tools.EventStatus, Payload: tools.ProgressPayload{
				CallID: "elysia-1", Server: server, Tool: "work", Progress: float64(i), Text: fmt.Sprint(i)}})
		}
	}
	return tools.Result{Name: "report", LLMText: "reported"}, nil
}

// TestOnlyTheLastProgressOfACallIsSaved: every report is streamed, but the
// query saves one progress event per call, the last, where the call's
// first report was.
func TestOnlyTheLastProgressOfACallIsSaved(t *testing.T) {
	const n = 5000
	store := newMemStore()
	m := NewManager(&Options{Store: store})
	m.SetTools([]Placement{{Tool: reportingTool{n: n}}})
	c, err := m.Conversation(t.Context(), "alice", "c1")
	if err != nil {
		t.Fatal(err)
	}
	model := script(step{call: "report", args: `{}`}, step{call: "text_response", args: `{"text":"done"}`})
	var rec recorder
	if err := c.Run(t.Context(), model, "report", "q1", rec.emit); err != nil {
		t.Fatal(err)
	}
	streamed := 0
	for _, p := range rec.payloads(tools.EventStatus) {
		if p["call_id"] != nil {
			streamed++
		}
	}
	if streamed != 2*n {
		t.Errorf("%d progress events streamed, want %d", streamed, 2*n)
	}
	store.mu.Lock()
	saved := store.events["alice/c1"]
	store.mu.Unlock()
	var progress []tools.ProgressPayload
	for _, env := range saved {
		var p tools.ProgressPayload
		if env.Type == tools.EventStatus && json.Unmarshal(env.Payload, &p) == nil && p.CallID != "" {
			progress = append(progress, p)
		}
	}
	if len(progress) != 2 || progress[0].Server != "a" || progress[1].Server != "b" ||
		progress[0].Progress != n || progress[1].Progress != n {
		t.Errorf("saved progress %+v, want the last of each call, %d", progress, n)
	}
	if got, want := len(saved), len(rec.evs)-(2*n-2); got != want {
		t.Errorf("%d events saved of %d streamed, want %d: all but the earlier reports", got, len(rec.evs), want)
	}
}

// floodAskingTool asks its user n questions at once; the questions that
// are declined at once come back, then it stops waiting for the others.
type floodAskingTool struct{ n, declines int }

func (floodAskingTool) Name() string          { return "ask_many" }
func (floodAskingTool) Description() string   { return "asks many questions" }
func (floodAskingTool) EndsRun() bool         { return false }
func (floodAskingTool) Inputs() []tools.Input { return nil }

func (f floodAskingTool) Run(ctx context.Context, _ tools.Call, emit tools.Emitter) (tools.Result, error) {
	asker := emit.(tools.Asker)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	declined := make(chan string, f.n)
	for range f.n {
		wg.Go(func() {
			ans, err := asker.Ask(ctx, tools.Question{Payload: tools.ElicitationPayload{Server: "s", Mode: "url", Message: "?"}})
			if err == nil && ans.Action == tools.ElicitDecline {
				declined <- ans.Reason
			}
		})
	}
	var reasons []string
	for range f.declines {
		select {
		case r := <-declined:
			reasons = append(reasons, r)
		case <-time.After(10 * time.Second):
			return tools.Result{}, fmt.Errorf("%d questions declined, want %d", len(reasons), f.declines)
		}
	}
	cancel()
	wg.Wait()
	return tools.Result{Name: "ask_many", LLMText: strings.Join(reasons, "\n")}, nil
}

// TestPendingQuestionsCappedPerUser: a user has at most MaxPendingQuestions
// questions waiting; more are declined at once, saying why.
func TestPendingQuestionsCappedPerUser(t *testing.T) {
	const n = 3 * MaxPendingQuestions
	m := NewManager(nil)
	m.SetTools([]Placement{{Tool: floodAskingTool{n: n, declines: n - MaxPendingQuestions}}})
	c, err := m.Conversation(t.Context(), "alice", "c1")
	if err != nil {
		t.Fatal(err)
	}
	model := script(step{call: "ask_many", args: `{}`}, step{call: "text_response", args: `{"text":"done"}`})
	var rec recorder
	if err := c.Run(t.Context(), model, "ask", "q1", rec.emit); err != nil {
		t.Fatal(err)
	}
	if got := len(rec.payloads(tools.EventElicitation)); got != MaxPendingQuestions {
		t.Errorf("%d questions reached the user, want the cap, %d", got, MaxPendingQuestions)
	}
	if want := fmt.Sprintf("%d questions already wait", MaxPendingQuestions); !strings.Contains(model.prompts[1], want) {
		t.Errorf("the declines do not say %q; the next decision saw %s", want, model.prompts[1])
	}
}
