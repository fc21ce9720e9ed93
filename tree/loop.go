package tree

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree/prompt"
)

// maxSteps bounds the decisions within one pass (descending branches and
// chained tools), whatever the shape of the tree.
const maxSteps = 64

// Run answers one query: it walks the conversation's tree, asking model to
// choose an option at each node, runs the chosen tools and streams every
// event to emit as an envelope for this user, conversation and queryID (a
// missing queryID is generated).
//
// emit is called from the calling goroutine and from the tools' Emit calls,
// never concurrently, in event order; it must not block for long. If the
// conversation was dropped by [Manager.Forget] before the query started,
// the query runs on the Manager's current copy (loaded from the Store)
// instead of c; if it was deleted, Run fails with ErrNotFound. A run
// emits a title event on the conversation's first query, and ends with
// exactly one text answer (a forced one when the recursion limit is reached
// or the model keeps choosing no valid option), then saves the conversation
// (Options.Store) and emits completed.
//
// Failures the model can act on go back to it as self-healing errors. The
// error returned is for failures it cannot act on: ErrBusy (nothing was
// emitted) when the previous query of the conversation is still running
// after Options.QueryWait; a model (provider) or tool error, after which
// an error event and completed are emitted; a failed save (the query is
// not durable), after which an error event is emitted and completed is
// not; or ctx's error. A run whose ctx ended is saved as stopped: its
// events end with a status whose payload has "stopped": true and a
// completed, so that the conversation reopens showing the stop. Those two
// are emitted only when ctx's cause matches [ErrStopped] (the user is
// there to see them); otherwise nothing more is emitted.
func (c *Conversation) Run(ctx context.Context, model llms.Model, query, queryID string, emit func(tools.Envelope)) error {
	if model == nil {
		return fmt.Errorf("run with a nil model: %w", ErrInvalid)
	}
	if queryID == "" {
		queryID = tools.NewID()
	}
	if emit == nil {
		emit = func(tools.Envelope) {}
	}
	cur, err := c.acquireCurrent(ctx)
	if err != nil {
		return err
	}
	defer func() { <-cur.sem }()
	r := cur.newRun(model, query, queryID, emit)
	r.intro = cur.profileForRun(ctx).intro()
	// The JSON the environment kept of the query's results served its
	// events, prompts and save; an idle conversation need not carry it.
	defer r.dropResultJSON()
	// The query's results are earlier results from now on.
	defer cur.forms.EndQuery()
	return r.finish(ctx, r.loop(ctx))
}

// dropResultJSON drops the JSON the environment, and the prompt's view of
// it, keep of the entries the query added (see tools.EnvEntry.JSON): about
// as many bytes again as the entries, for a conversation that may now stay
// idle in memory for long. Only the lists the query added to are visited,
// so the cost does not grow with the conversation. A later use encodes an
// entry again.
func (r *run) dropResultJSON() {
	for i, k := range r.added {
		if slices.Contains(r.added[:i], k) {
			continue
		}
		r.c.env.DropJSON(k.Tool, k.Name)
		tools.DropJSON(r.c.promptEnv[k.Tool][k.Name])
	}
}

// acquireCurrent takes the query token of the Manager's copy of the
// conversation: c's when c is still that copy once it holds the token (see
// Manager.Forget for why that check suffices), else the current copy's.
func (c *Conversation) acquireCurrent(ctx context.Context) (*Conversation, error) {
	m := c.m
	for {
		if err := c.acquire(ctx); err != nil {
			return nil, err
		}
		m.mu.Lock()
		current, deleted := m.convs[convKey{c.userID, c.id}] == c, c.deleted
		m.mu.Unlock()
		if current {
			return c, nil
		}
		<-c.sem
		if deleted {
			return nil, fmt.Errorf("run a query on conversation %s/%s: %w", c.userID, c.id, errDeleted)
		}
		next, err := m.reload(ctx, c, "run a query on")
		if err != nil {
			return nil, err
		}
		c = next
	}
}

// acquire takes the conversation's query token, waiting up to QueryWait.
func (c *Conversation) acquire(ctx context.Context) error {
	select {
	case c.sem <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(c.m.opts.QueryWait)
	defer t.Stop()
	select {
	case c.sem <- struct{}{}:
		return nil
	case <-t.C:
		return fmt.Errorf("conversation %s/%s: %w", c.userID, c.id, ErrBusy)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run is the state of one query. It is owned by the goroutine in Run; only
// emit may be called from tools' goroutines.
type run struct {
	c       *Conversation
	opts    *Options
	logger  *slog.Logger
	model   llms.Model
	tree    *Tree
	query   string
	queryID string
	// intro is the user's profile as the system message opens with it.
	intro string
	title string // non-empty on the first query
	index int    // the query's index in the conversation (tree_index)
	// history is the conversation's history as the prompt shows it.
	history prompt.History
	tasks   []Task
	errs    []PreviousError
	pass    int
	emitter tools.Emitter
	// added lists the results the query added to the environment, in
	// order: the newest, which the decision prompt keeps whole first.
	added []prompt.ResultKey

	emitFn func(tools.Envelope)
	// emitting holds a token while an event is recorded and passed to
	// emitFn, so that emitFn is called one event at a time, in the order
	// the events are recorded, without holding mu across it.
	emitting chan struct{}

	// mu guards events, results, texts and progressAt. results holds the
	// payloads of the result events, by envelope ID, for the Store's
	// digests. progressAt is where in events each tool call's progress is
	// (by server and call id): a later report replaces it there, so a
	// query saves the last progress of each call, however many it streams.
	mu         sync.Mutex
	events     []tools.Envelope
	results    map[string]tools.ResultPayload
	texts      []string
	progressAt map[[2]string]int
}

// queryEvents is room for the events of a query of a list, a call and an
// answer (11), made at once rather than grown by doubling.
const queryEvents = 16

func (c *Conversation) newRun(model llms.Model, query, queryID string, emit func(tools.Envelope)) *run {
	r := &run{c: c, opts: &c.m.opts, model: model, tree: c.m.treeOf(c), query: query,
		queryID: queryID, emitFn: emit, emitting: make(chan struct{}, 1), tasks: []Task{}, errs: []PreviousError{},
		events: make([]tools.Envelope, 0, queryEvents)}
	r.logger = slog.New(lazyAttrs{c.m.logger.Handler(), []slog.Attr{
		slog.String(logKeyUser, c.userID), slog.String(logKeyConversation, c.id), slog.String("query_id", queryID)}})
	r.emitter = runEmitter{r}
	c.mu.Lock()
	if c.title == "" {
		c.title = makeTitle(query)
		r.title = c.title
	}
	r.index = c.queries
	// History is only appended to, so the messages of h stay as they are
	// after the lock is released.
	h := c.history
	c.mu.Unlock()
	r.history = prompt.FoldHistory(h, prompt.Budget(r.opts.MaxPromptBytes))
	return r
}

// emit wraps ev in an envelope, records it and passes it on.
func (r *run) emit(ev tools.Event) {
	env, err := tools.NewEnvelope(ev, r.c.userID, r.c.id, r.queryID)
	if err != nil {
		r.logger.Warn("dropping an event whose payload does not marshal", "type", ev.Type, logKeyErr, err)
		return
	}
	r.deliver(env, ev)
}

// deliver records env, the envelope of ev, and passes it on to emitFn.
func (r *run) deliver(env tools.Envelope, ev tools.Event) {
	r.emitting <- struct{}{}
	defer func() { <-r.emitting }()
	r.mu.Lock()
	r.record(env, ev)
	r.mu.Unlock()
	r.emitFn(env)
}

func (r *run) record(env tools.Envelope, ev tools.Event) {
	if p, ok := ev.Payload.(tools.ProgressPayload); ok && p.CallID != "" {
		k := [2]string{p.Server, p.CallID}
		if i, seen := r.progressAt[k]; seen {
			r.events[i] = env
			return
		}
		if r.progressAt == nil {
			r.progressAt = map[[2]string]int{}
		}
		r.progressAt[k] = len(r.events)
	}
	r.events = append(r.events, env)
	if p, ok := ev.Payload.(tools.ResultPayload); ok && ev.Type == tools.EventResult {
		if r.results == nil {
			r.results = map[string]tools.ResultPayload{}
		}
		r.results[env.ID] = p
	}
	if p, ok := ev.Payload.(tools.TextPayload); ok && ev.Type == tools.EventText {
		for _, o := range p.Objects {
			if t, _ := o["text"].(string); t != "" {
				r.texts = append(r.texts, t)
			}
		}
	}
}

func (r *run) textCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.texts)
}

// loop runs the passes of the query until a tool ends it.
func (r *run) loop(ctx context.Context) error {
	if r.title != "" {
		r.emit(tools.Event{Type: tools.EventTitle, Payload: map[string]any{"title": r.title}})
	}
	for r.pass = 1; r.pass <= r.opts.RecursionLimit; r.pass++ {
		if done, err := r.onePass(ctx); err != nil || done {
			return err
		}
	}
	r.pass = r.opts.RecursionLimit
	return r.forcedAnswer(ctx, fmt.Sprintf("the recursion limit of %d passes was reached", r.opts.RecursionLimit))
}

// onePass walks from the root to a tool and runs it; done reports that the
// run has ended.
func (r *run) onePass(ctx context.Context) (done bool, err error) {
	node := r.tree.root
	for range maxSteps {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if done, err := r.autoRun(ctx, node); err != nil || done {
			return done, err
		}
		d, err := r.decide(ctx, node)
		if errors.Is(err, errNoValidChoice) {
			return true, r.forcedAnswer(ctx, "no valid option was chosen at node "+node.id)
		}
		if err != nil {
			return false, err
		}
		// A decision's tree_update goes out before the events it causes (a
		// branch's status line; a tool's status, result, ...), so that a
		// client shows the decision above what it led to, as the event log
		// replays it.
		if d.opt.isBranch() {
			r.treeUpdate(node, d, false)
			if s := d.opt.next.status; s != "" {
				r.emit(tools.NewStatus(s))
			}
			node = d.opt.next
			continue
		}
		// reset says the next pass starts at the root, as Elysia computes it
		// (next is None and not completed), with "completed" known before the
		// tool runs: the decision of a tool that ends the run has reset
		// false, so the frontend draws no new pass under the answer.
		next := d.opt.next
		r.treeUpdate(node, d, next == nil && !d.opt.tool.EndsRun())
		ok, ended, err := r.runTool(ctx, d.opt.tool, d.args)
		if err != nil {
			return ended, err
		}
		if ended {
			return true, nil
		}
		if !ok || next == nil {
			return false, nil
		}
		node = next
	}
	return false, nil
}

// autoRun runs the node's tools that ask to run without a decision.
func (r *run) autoRun(ctx context.Context, node *Node) (done bool, err error) {
	for _, o := range node.options {
		ar, ok := o.tool.(tools.AutoRunner)
		if !ok || !ar.AutoRun(&r.c.env) {
			continue
		}
		if a, ok := o.tool.(tools.Availability); ok {
			if avail, _ := a.Available(&r.c.env); !avail {
				continue
			}
		}
		inputs, _ := o.spec()
		r.treeUpdate(node, decision{opt: o, reasoning: "Running " + o.id + " automatically."}, o.next == nil && !o.tool.EndsRun())
		_, ended, err := r.runTool(ctx, o.tool, withDefaults(inputs, nil))
		if err != nil {
			return ended, err
		}
		if ended {
			return true, nil
		}
	}
	return false, nil
}

func (r *run) treeUpdate(node *Node, d decision, reset bool) {
	r.emit(tools.Event{Type: tools.EventTreeUpdate, Payload: tools.TreeUpdatePayload{
		Node: node.id, TreeIndex: r.index, Decision: d.opt.id, Reasoning: d.reasoning, Reset: reset}})
}

// runTool runs one tool with the step timeout. ok reports a successful
// result; ended that the tool ended the run with an answer.
func (r *run) runTool(ctx context.Context, tool tools.Tool, args map[string]any) (ok, ended bool, err error) {
	name := tool.Name()
	if sl, isLiner := tool.(tools.StatusLiner); isLiner {
		if s := sl.StatusLine(args); s != "" {
			r.emit(tools.NewStatus(s))
		}
	}
	before := r.textCount()
	tctx, cancel := context.WithTimeout(ctx, r.opts.StepTimeout)
	start := time.Now()
	res, err := tool.Run(tctx, tools.Call{Args: args, Query: r.query, Env: &r.c.env, RequestID: r.queryID,
		UserID: r.c.userID, ConversationID: r.c.id}, r.emitter)
	timedOut := tctx.Err() != nil && ctx.Err() == nil
	cancel()
	r.logger.Debug("tool run", "tool", name, "duration", time.Since(start), "is_error", res.IsError, logKeyErr, err)
	if err != nil {
		if ctx.Err() != nil {
			return false, false, ctx.Err()
		}
		if !timedOut {
			return false, false, fmt.Errorf("run tool %s: %w", name, err)
		}
		res = tools.ErrorResult(fmt.Sprintf("%s timed out after %s", name, r.opts.StepTimeout),
			"try a smaller request, or choose another option")
	}
	if res.IsError {
		r.emit(tools.Event{Type: tools.EventSelfHealingError, Payload: tools.SelfHealingErrorPayload{
			Feedback: res.Feedback, ErrorMessage: res.Error}})
		r.errs = append(r.errs, PreviousError{Tool: name, ErrorMessage: res.Error, Feedback: res.Feedback})
		r.tasks = append(r.tasks, Task{Tool: name, Inputs: args, Result: res.Error, Error: true})
		return false, false, nil
	}
	if len(res.Objects) > 0 {
		rname, typ, md := res.Name, res.Type, res.Metadata
		if rname == "" {
			rname = name
		}
		if typ == "" {
			typ = "table"
		}
		if md == nil {
			md = map[string]any{}
		}
		entry := r.c.env.AddEncoded(name, rname, res.Objects, res.ObjectsJSON, md)
		r.addToPromptEnv(name, rname, entry)
		r.added = append(r.added, prompt.ResultKey{Tool: name, Name: rname})
		r.emit(tools.Event{Type: tools.EventResult, Payload: entry.ResultPayload(typ)})
	}
	r.tasks = append(r.tasks, Task{Tool: name, Inputs: args, Result: summary(res), Error: false})
	if !tool.EndsRun() {
		return true, false, nil
	}
	if r.textCount() == before {
		return true, true, r.forcedAnswer(ctx, name+" ended the run without an answer")
	}
	return true, true, nil
}

// promptEnv returns the conversation's environment for a decision prompt,
// without copying it; see Conversation.promptEnv. The caller must not
// change it.
func (r *run) promptEnv() map[string]map[string][]tools.EnvEntry {
	if r.c.promptEnv == nil {
		r.c.promptEnv, r.c.forms = r.c.env.Snapshot(), prompt.FormCache{}
	}
	return r.c.promptEnv
}

// addToPromptEnv records in promptEnv an entry the run added to the
// environment.
func (r *run) addToPromptEnv(tool, name string, e tools.EnvEntry) {
	pe := r.c.promptEnv
	if pe == nil {
		return // the next promptEnv snapshot has it
	}
	if pe[tool] == nil {
		pe[tool] = map[string][]tools.EnvEntry{}
	}
	pe[tool][name] = append(pe[tool][name], e)
}

// summary is what tasks_completed says about a successful result.
func summary(res tools.Result) string {
	if res.LLMText != "" {
		return res.LLMText
	}
	if n := len(res.Objects); n > 0 {
		return fmt.Sprintf("returned %d objects (see the environment)", n)
	}
	return "done"
}

// finish records the query in the conversation, saves it and emits
// completed; see Run for what each outcome emits.
func (r *run) finish(ctx context.Context, runErr error) error {
	if runErr != nil && ctx.Err() != nil {
		return r.stop(ctx, runErr)
	}
	if runErr != nil {
		r.emit(tools.Event{Type: tools.EventError, Payload: tools.StatusPayload{Text: runErr.Error()}})
	}
	r.commit()
	done := tools.Event{Type: tools.EventCompleted}
	completed, _ := tools.NewEnvelope(done, r.c.userID, r.c.id, r.queryID)
	events, results := r.snapshotEvents()
	if saveErr := r.c.m.saveQuery(ctx, r.c, append(events, completed), results); saveErr != nil {
		// Not durable, so not done: the query fails, without completed.
		text := "the answer could not be saved; try again"
		if errors.Is(saveErr, ErrStoreUnavailable) {
			text = "the answer could not be saved: the database is unavailable; try again shortly"
		}
		r.emit(tools.Event{Type: tools.EventError, Payload: tools.StatusPayload{Text: text}})
		return errors.Join(runErr, saveErr)
	}
	r.deliver(completed, done)
	return runErr
}

// stop records and saves a run whose ctx ended (see Run): its events end
// with a stopped status and completed, emitted only to a user who stopped
// it. It returns runErr.
func (r *run) stop(ctx context.Context, runErr error) error {
	r.commit()
	text, tell := "Stopped before it finished.", errors.Is(context.Cause(ctx), ErrStopped)
	if tell {
		text = "Stopped by the user."
	}
	marks := []tools.Event{
		{Type: tools.EventStatus, Payload: map[string]any{"text": text, "stopped": true}},
		{Type: tools.EventCompleted},
	}
	envs := make([]tools.Envelope, 0, len(marks))
	for _, ev := range marks {
		env, err := tools.NewEnvelope(ev, r.c.userID, r.c.id, r.queryID)
		if err != nil {
			return errors.Join(runErr, err) // a map of a string and a bool marshals
		}
		envs = append(envs, env)
	}
	// The stopped status is recorded like any event; completed, as in
	// finish, follows the save.
	if tell {
		r.deliver(envs[0], marks[0])
	} else {
		r.mu.Lock()
		r.record(envs[0], marks[0])
		r.mu.Unlock()
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	events, results := r.snapshotEvents()
	if err := r.c.m.saveQuery(sctx, r.c, append(events, envs[1]), results); err != nil {
		r.logger.Warn("saving a stopped query", logKeyErr, err)
		return runErr
	}
	if tell {
		r.deliver(envs[1], marks[1])
	}
	return runErr
}

// snapshotEvents returns copies of the events so far and of the payloads
// of the result events among them.
func (r *run) snapshotEvents() ([]tools.Envelope, map[string]tools.ResultPayload) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]tools.Envelope(nil), r.events...), maps.Clone(r.results)
}

// commit adds the query and its answer to the conversation's history, and
// counts the query (and its results in the environment) as a change to
// save.
func (r *run) commit() {
	r.mu.Lock()
	answer := strings.Join(r.texts, "\n\n")
	r.mu.Unlock()
	c := r.c
	c.mu.Lock()
	c.history = append(c.history, Message{Role: "user", Content: r.query})
	if answer != "" {
		c.history = append(c.history, Message{Role: "assistant", Content: answer})
	}
	c.queries++
	c.updated = time.Now().UTC()
	c.mu.Unlock()
	c.m.changed(c)
}
