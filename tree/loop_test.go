package tree

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/elysia-go/elysia/tools"
)

// recorder collects envelopes; it is safe for concurrent use.
type recorder struct {
	mu  sync.Mutex
	evs []tools.Envelope
}

func (r *recorder) emit(e tools.Envelope) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, e)
}

func (r *recorder) types() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s []string
	for _, e := range r.evs {
		s = append(s, string(e.Type))
	}
	return strings.Join(s, " ")
}

func (r *recorder) payloads(typ tools.EventType) []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]any
	for _, e := range r.evs {
		if e.Type == typ {
			var m map[string]any
			_ = json.Unmarshal(e.Payload, &m)
			out = append(out, m)
		}
	}
	return out
}

func answerOf(r *recorder) string {
	ps := r.payloads(tools.EventText)
	if len(ps) != 1 {
		return ""
	}
	obj := ps[len(ps)-1]["objects"].([]any)[0].(map[string]any)
	return obj["text"].(string)
}

func newTestManager(t *testing.T, opts *Options) (*Manager, *Conversation) {
	t.Helper()
	m := NewManager(opts)
	m.SetTools([]Placement{{Tool: gateway("todo")}})
	c, err := m.Conversation(t.Context(), "alice", "c1")
	if err != nil {
		t.Fatal(err)
	}
	return m, c
}

func TestRunListExecuteAnswer(t *testing.T) {
	store := newMemStore()
	_, c := newTestManager(t, &Options{Store: store})
	model := script(
		step{call: "mcp_todo", args: `{"action":"list"}`, content: "Listing the todo tools."},
		step{call: "mcp_todo", args: `{"action":"execute","tool_name":"create_todo","tool_inputs":{"title":"Buy milk"}}`},
		step{call: "text_response", args: `{"text":"Added 'Buy milk'."}`},
	)
	var rec recorder
	if err := c.Run(t.Context(), model, "create a todo titled \"Buy milk\"", "q1", rec.emit); err != nil {
		t.Fatal(err)
	}
	// Each decision's tree_update, then the events it caused.
	want := "title tree_update status result tree_update status result tree_update status text completed"
	if got := rec.types(); got != want {
		t.Errorf("events:\n got %s\nwant %s", got, want)
	}
	if got := answerOf(&rec); got != "Added 'Buy milk'." {
		t.Errorf("answer = %q", got)
	}
	res := rec.payloads(tools.EventResult)
	if ref := res[0]["objects"].([]any)[0].(map[string]any)["_REF_ID"]; ref != "mcp_todo_list_0_0" {
		t.Errorf("first result _REF_ID = %v", ref)
	}
	tu := rec.payloads(tools.EventTreeUpdate)[0]
	if tu["node"] != "base" || tu["decision"] != "mcp_todo" || tu["reasoning"] != "Listing the todo tools." || tu["reset"] != true {
		t.Errorf("tree_update = %v", tu)
	}
	// The second decision saw the first result and task.
	var dc map[string]any
	if err := json.Unmarshal([]byte(model.prompts[1]), &dc); err != nil {
		t.Fatal(err)
	}
	if dc["tree_count"] != "2/5" || len(dc["tasks_completed"].([]any)) != 1 {
		t.Errorf("second decision context: tree_count %v, tasks %v", dc["tree_count"], dc["tasks_completed"])
	}
	if h := c.History(); len(h) != 2 || h[1].Content != "Added 'Buy milk'." {
		t.Errorf("history = %v", h)
	}
	// A second query gets the history and no title.
	var rec2 recorder
	model2 := script(step{call: "cited_summarize", args: `{"text":"You have [mcp_todo_create_todo_0_0]."}`})
	if err := c.Run(t.Context(), model2, "what did I add?", "", rec2.emit); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(rec2.types(), "title") {
		t.Error("second query emitted a title")
	}
	if !strings.Contains(model2.prompts[0], `"conversation_history":[{"role":"user"`) {
		t.Errorf("history not in the decision context: %.300s", model2.prompts[0])
	}
}

func TestDecisionContextKeyOrder(t *testing.T) {
	_, c := newTestManager(t, &Options{DescribeOptions: true})
	model := script(step{call: "text_response", args: `{"text":"hi"}`})
	if err := c.Run(t.Context(), model, "hello", "q", nil); err != nil {
		t.Fatal(err)
	}
	p := model.prompts[0]
	keys := []string{"user_prompt", "conversation_history", "node", "available_options", "unavailable_options",
		"environment", "tasks_completed", "previous_errors", "tree_count"}
	last := -1
	for _, k := range keys {
		i := strings.Index(p, `"`+k+`":`)
		if i <= last {
			t.Fatalf("key %s out of order in %s", k, p)
		}
		last = i
	}
	for _, frag := range []string{
		`"unavailable_options":[{"name":"cited_summarize","reason":"no results in the environment yet"}]`,
		`"environment":{}`, `"tasks_completed":[]`, `"previous_errors":[]`, `"tree_count":"1/5"`,
		`"inputs":{"action":{"type":"string","description":"list or execute","default":"list","enum":["list","execute"],"required":false},"tool_name"`,
	} {
		if !strings.Contains(p, frag) {
			t.Errorf("decision context lacks %s:\n%s", frag, p)
		}
	}
	if got := strings.Join(model.offered[0], ","); got != "text_response,mcp_todo" {
		t.Errorf("functions offered = %s", got)
	}
}

// A model that is sent the options as functions gets their descriptions
// and inputs there only: the decision context names them and says which
// end the run.
func TestDecisionContextNamesOptions(t *testing.T) {
	_, c := newTestManager(t, nil)
	model := script(step{call: "text_response", args: `{"text":"hi"}`})
	if err := c.Run(t.Context(), model, "hello", "q", nil); err != nil {
		t.Fatal(err)
	}
	p := model.prompts[0]
	want := `"available_options":[{"name":"text_response","end":true},{"name":"mcp_todo","end":false}],"unavailable_options":`
	if !strings.Contains(p, want) {
		t.Errorf("decision context lacks %s:\n%s", want, p)
	}
	if strings.Contains(p, `"inputs"`) || strings.Contains(p, "list or execute") {
		t.Errorf("decision context repeats the functions' inputs:\n%s", p)
	}
	if got := strings.Join(model.offered[0], ","); got != "text_response,mcp_todo" {
		t.Errorf("functions offered = %s", got)
	}
	if got := model.params[0]["mcp_todo"]; !strings.Contains(got, `"action"`) || !strings.Contains(got, "list or execute") {
		t.Errorf("mcp_todo's function parameters = %s, want its inputs", got)
	}
}

func TestRunMissingToolForcesAnswer(t *testing.T) {
	_, c := newTestManager(t, nil)
	bad := step{call: "mcp_nope", args: `{}`}
	model := script(bad, bad, bad, bad, step{call: "text_response", args: `{"text":"Sorry."}`})
	var rec recorder
	if err := c.Run(t.Context(), model, "do it", "q", rec.emit); err != nil {
		t.Fatal(err)
	}
	if model.callCount() != 5 {
		t.Errorf("model calls = %d, want 1 + 3 retries + 1 forced", model.callCount())
	}
	if got := strings.Join(model.offered[4], ","); got != "text_response" {
		t.Errorf("forced answer offered %s", got)
	}
	if got := answerOf(&rec); got != "Sorry." {
		t.Errorf("answer = %q", got)
	}
	if got := rec.types(); got != "title text completed" {
		t.Errorf("events = %s", got)
	}
}

func TestRunRetryRecovers(t *testing.T) {
	_, c := newTestManager(t, nil)
	model := script(
		step{call: "mcp_nope"},
		step{call: "mcp_todo", args: `{"action":`}, // invalid JSON
		step{call: "mcp_todo", args: `{"action":"delete"}`},
		step{call: "text_response", args: `{"text":"ok"}`},
	)
	var rec recorder
	if err := c.Run(t.Context(), model, "q", "q", rec.emit); err != nil {
		t.Fatal(err)
	}
	if got := answerOf(&rec); got != "ok" {
		t.Errorf("answer = %q", got)
	}
}

func TestRunSelfHealing(t *testing.T) {
	_, c := newTestManager(t, nil)
	model := script(
		step{call: "mcp_todo", args: `{"action":"execute","tool_name":"create_todo","tool_inputs":{}}`},
		step{call: "mcp_todo", args: `{"action":"execute","tool_name":"create_todo","tool_inputs":{"title":"x"}}`},
		step{call: "text_response", args: `{"text":"done"}`},
	)
	var rec recorder
	if err := c.Run(t.Context(), model, "q", "q", rec.emit); err != nil {
		t.Fatal(err)
	}
	she := rec.payloads(tools.EventSelfHealingError)
	if len(she) != 1 || she[0]["feedback"] != "missing property 'title'" {
		t.Fatalf("self-healing events = %v", she)
	}
	if !strings.Contains(model.prompts[1], `"previous_errors":[{"tool":"mcp_todo","error_message":"invalid tool_inputs for create_todo","feedback":"missing property 'title'"}]`) {
		t.Errorf("previous error not fed back:\n%s", model.prompts[1])
	}
}

func TestRunRecursionLimit(t *testing.T) {
	_, c := newTestManager(t, &Options{RecursionLimit: 3})
	model := script()
	model.last = &step{call: "mcp_todo", args: `{}`}
	var rec recorder
	if err := c.Run(t.Context(), model, "loop", "q", rec.emit); err != nil {
		t.Fatal(err)
	}
	// 3 passes, then a forced call that answers with the wrong function
	// falls back to a summary text.
	if model.callCount() != 4 {
		t.Errorf("model calls = %d, want 4", model.callCount())
	}
	if got := answerOf(&rec); !strings.Contains(got, "recursion limit of 3") {
		t.Errorf("answer = %q", got)
	}
}

func TestRunProviderError(t *testing.T) {
	_, c := newTestManager(t, nil)
	boom := errors.New("503 from provider")
	var rec recorder
	err := c.Run(t.Context(), script(step{err: boom}), "q", "q", rec.emit)
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if got := rec.types(); got != "title error completed" {
		t.Errorf("events = %s", got)
	}
}

func TestRunSaveBeforeCompleted(t *testing.T) {
	store := newMemStore()
	_, c := newTestManager(t, &Options{Store: store})
	var rec recorder
	var typesAtSave string
	store.onSave = func() { typesAtSave = rec.types() }
	if err := c.Run(t.Context(), script(step{call: "text_response", args: `{"text":"hi"}`}), "hello there", "q", rec.emit); err != nil {
		t.Fatal(err)
	}
	if typesAtSave != "title tree_update status text" {
		t.Errorf("events emitted when saved = %q", typesAtSave)
	}
	saved := store.events["alice/c1"]
	if n := len(saved); n != 5 || saved[n-1].Type != tools.EventCompleted {
		t.Errorf("saved events = %d, last %v", n, saved[len(saved)-1].Type)
	}
	st, ok, _ := store.Load(t.Context(), "alice", "c1")
	if !ok || st.Title != "hello there" || len(st.History) != 2 {
		t.Errorf("saved state = %+v", st)
	}
}

// TestRunCancelled: a run whose ctx ends is saved as stopped (a stopped
// status, then completed), so that it reopens as stopped; only a user's
// stop (the cause ErrStopped) is told to emit, since otherwise nobody is
// there to see it.
func TestRunCancelled(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cause    error
		text     string
		wantSent string // the types emitted after the stop
	}{
		{"stopped by the user", ErrStopped, "Stopped by the user.", "status completed"},
		{"client gone", nil, "Stopped before it finished.", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := newMemStore()
			_, c := newTestManager(t, &Options{Store: store})
			ctx, cancel := context.WithCancelCause(t.Context())
			model := script(step{call: "mcp_todo", args: `{}`})
			model.block = make(chan struct{})
			model.entered = make(chan struct{}, 1)
			var rec recorder
			done := make(chan error, 1)
			go func() { done <- c.Run(ctx, model, "q", "q", rec.emit) }()
			<-model.entered
			before := rec.types()
			cancel(tc.cause)
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v", err)
			}
			if got := strings.TrimSpace(strings.TrimPrefix(rec.types(), before)); got != tc.wantSent {
				t.Errorf("events after the stop = %q, want %q", got, tc.wantSent)
			}
			saved := store.events["alice/c1"]
			if n := len(saved); n < 2 || saved[n-1].Type != tools.EventCompleted || saved[n-2].Type != tools.EventStatus {
				t.Fatalf("saved events end %v, want a status and completed", saved)
			}
			var p map[string]any
			if err := json.Unmarshal(saved[len(saved)-2].Payload, &p); err != nil || p["stopped"] != true || p["text"] != tc.text {
				t.Errorf("saved stop = %s, want stopped true and %q", saved[len(saved)-2].Payload, tc.text)
			}
		})
	}
}

func TestRunBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c := newTestManager(t, nil)
		model := script(step{call: "text_response", args: `{"text":"first"}`})
		model.block = make(chan struct{})
		go func() { _ = c.Run(t.Context(), model, "first", "q1", nil) }()
		synctest.Wait()
		start := time.Now()
		err := c.Run(t.Context(), script(), "second", "q2", nil)
		if !errors.Is(err, ErrBusy) {
			t.Errorf("err = %v, want ErrBusy", err)
		}
		if waited := time.Since(start); waited != 30*time.Second {
			t.Errorf("waited %v, want 30s", waited)
		}
		// A query that arrives while the first finishes within the wait runs.
		done := make(chan error, 1)
		go func() {
			done <- c.Run(t.Context(), script(step{call: "text_response", args: `{"text":"2"}`}), "third", "q3", nil)
		}()
		time.Sleep(10 * time.Second) // fake time inside the bubble
		close(model.block)
		if err := <-done; err != nil {
			t.Errorf("third query: %v", err)
		}
	})
}

func TestRunEmptyModeForcedAnswer(t *testing.T) {
	m := NewManager(&Options{DefaultMode: Empty})
	c, _ := m.Conversation(t.Context(), "u", "c")
	var rec recorder
	if err := c.Run(t.Context(), script(step{content: "Nothing to do."}), "hi", "q", rec.emit); err != nil {
		t.Fatal(err)
	}
	if got := answerOf(&rec); got != "Nothing to do." {
		t.Errorf("answer = %q", got)
	}
}

func TestRunBranchAndChain(t *testing.T) {
	m := NewManager(&Options{DefaultMode: MultiBranch})
	m.SetTools([]Placement{{Tool: gateway("todo")}})
	c, _ := m.Conversation(t.Context(), "u", "c")
	if _, err := m.Apply(t.Context(), "u", "c", Op{Kind: OpAddTool, ToolName: "text_response", BranchID: "mcp", FromToolIDs: []string{"mcp_todo"}}); !errors.Is(err, ErrExists) {
		t.Fatalf("adding a tool twice: %v", err)
	}
	model := script(
		step{call: "mcp", content: "Using MCP."},
		step{call: "mcp_todo", args: `{}`},
		step{call: "text_response", args: `{"text":"listed"}`},
	)
	var rec recorder
	if err := c.Run(t.Context(), model, "list", "q", rec.emit); err != nil {
		t.Fatal(err)
	}
	tus := rec.payloads(tools.EventTreeUpdate)
	if len(tus) != 3 || tus[0]["decision"] != "mcp" || tus[0]["reset"] != false || tus[1]["node"] != "mcp" {
		t.Errorf("tree updates = %v", tus)
	}
}

// TestEmitOrderWithoutHoldingMu emits from several goroutines at once, as a
// tool may: emit must get the events one at a time and in the order they
// are recorded, without run.mu held across it (STYLE §8).
func TestEmitOrderWithoutHoldingMu(t *testing.T) {
	_, c := newTestManager(t, nil)
	var (
		r         *run
		inFlight  atomic.Int32
		delivered []tools.Envelope
		heldMu    atomic.Int32
	)
	emit := func(env tools.Envelope) {
		if inFlight.Add(1) != 1 {
			t.Error("emit called concurrently")
		}
		defer inFlight.Add(-1)
		if r.mu.TryLock() {
			r.mu.Unlock()
		} else {
			heldMu.Add(1)
		}
		delivered = append(delivered, env) // emit is never concurrent
	}
	r = c.newRun(script(), "q", "q", emit)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { r.emitter.Emit(tools.NewStatus(fmt.Sprint("step ", i))) })
	}
	wg.Wait()
	if n := heldMu.Load(); n != 0 {
		t.Errorf("run.mu was held across %d of %d emits", n, len(delivered))
	}
	recorded, _ := r.snapshotEvents()
	if diff := cmp.Diff(recorded, delivered); diff != "" {
		t.Errorf("emitted order differs from recorded order (-recorded +emitted):\n%s", diff)
	}
}

// TestBranchStatusLine adds a branch with a status line: choosing the
// branch emits it as a status event after the branch's tree_update, and
// the line survives a reload from the Store without entering the tree JSON.
func TestBranchStatusLine(t *testing.T) {
	ctx := t.Context()
	store := newMemStore()
	m, _ := newTestManager(t, &Options{Store: store})
	for _, op := range []Op{
		{Kind: OpAddBranch, BranchID: "work", Description: "Work tools", Status: "Looking at work tools...", Root: true},
		{Kind: OpRemoveTool, ToolName: "mcp_todo"},
		{Kind: OpAddTool, ToolName: "mcp_todo", BranchID: "work"},
	} {
		if _, err := m.Apply(ctx, "alice", "c1", op); err != nil {
			t.Fatal(err)
		}
	}
	c, _ := m.Conversation(ctx, "alice", "c1")
	var rec recorder
	model := script(step{call: "work"}, step{call: "mcp_todo", args: `{"action":"list"}`},
		step{call: "text_response", args: `{"text":"done"}`})
	if err := c.Run(ctx, model, "list my tools", "q1", rec.emit); err != nil {
		t.Fatal(err)
	}
	want := "title tree_update status tree_update status result tree_update status text completed"
	if got := rec.types(); got != want {
		t.Errorf("events:\n got %s\nwant %s", got, want)
	}
	if st := rec.payloads(tools.EventStatus); len(st) == 0 || st[0]["text"] != "Looking at work tools..." {
		t.Errorf("status events = %v, want the branch's line first", st)
	}

	m2 := NewManager(&Options{Store: store})
	m2.SetTools([]Placement{{Tool: gateway("todo")}})
	c2, err := m2.Conversation(ctx, "alice", "c1")
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := c2.Tree().Node("work"); !ok {
		t.Error("the reloaded tree has no branch work")
	} else if n.Status() != "Looking at work tools..." {
		t.Errorf("reloaded branch status = %q", n.Status())
	}
	js, err := c2.Tree().MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(js), "status") || strings.Contains(string(js), "Looking at") {
		t.Errorf("the status line leaked into the tree JSON: %s", js)
	}
}

// The JSON the environment keeps of a query's results, for its events,
// prompts and save, is not kept once the query is over.
func TestRunDropsResultJSON(t *testing.T) {
	_, c := newTestManager(t, nil)
	model := script(
		step{call: "mcp_todo", args: `{"action":"list"}`},
		step{call: "text_response", args: `{"text":"Listed."}`},
	)
	if err := c.Run(t.Context(), model, "list my todo tools", "q", nil); err != nil {
		t.Fatal(err)
	}
	kept := func(e tools.EnvEntry) bool {
		a, _ := e.JSON()
		b, _ := e.JSON()
		return &a[0] == &b[0]
	}
	entries := c.env.Snapshot()["mcp_todo"]["list"]
	if len(entries) != 1 {
		t.Fatalf("%d list entries, want 1", len(entries))
	}
	if kept(entries[0]) {
		t.Error("the environment still keeps the result's JSON after the query")
	}
	if kept(c.promptEnv["mcp_todo"]["list"][0]) {
		t.Error("the prompt's view still keeps the result's JSON after the query")
	}
}
