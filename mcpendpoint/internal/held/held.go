// Package held keeps the state of a held call: a 2026-07-28 request
// (tools/call, prompts/get) that runs on a goroutine of the endpoint
// while its client is asked for input in input_required results. A Call
// keeps the questions put to the client by the key it answers them
// under, the rounds of input_required results, the client request
// waiting on the call now (its Waiter), and the call's end; Await is the
// wait of one request for the call's next event.
package held

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpendpoint/internal/reqstate"
	"github.com/elysia-go/elysia/tools"
)

// ErrGone is matched by the error of a request for a call that no longer
// waits for it: it ended, its wait for the client's answers lapsed, or
// its client left.
var ErrGone = errors.New("the call waiting for these answers is gone")

// ErrTakenOver is the error of a request waiting on a call when another
// request (with the same requestState) took the call from it.
var ErrTakenOver = errors.New("another request with the same requestState took this call over")

// RoundWait is how long the first question of a round waits for the
// others its server asked with it, so that they go to the client in one
// input_required result.
const RoundWait = 100 * time.Millisecond

// NewID returns a new random id (32 hex digits), as a held call's.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// Config is what New makes a Call of.
type Config struct {
	// ID names the call; User is whose it is.
	ID, User string
	// Cancel cancels the call's run.
	Cancel context.CancelFunc
	// Waiter is the request waiting on the call from the start.
	Waiter *Waiter
	// Early is the answers the client sent with its first request, before
	// anything was asked, by key (see Ask). New copies it.
	Early mcp.InputResponses
	// Bind computes what the call's requestStates are bound to (Bind); it
	// is called once at most.
	Bind func() []byte
	// Rounds is the most input_required results the call may give: a
	// question past them ends Await with Exhausted.
	Rounds int
	// Wait is how long the call waits for its client's retry after an
	// input_required result (Asked). When none comes in time the call is
	// gone, and Lapsed is called with it, on a goroutine of its own.
	Wait   time.Duration
	Lapsed func(*Call)
}

// Call is one held call. Its methods are safe for concurrent use.
type Call struct {
	id     string
	user   string
	cancel context.CancelFunc
	bind   func() []byte
	rounds int
	wait   time.Duration
	lapsed func(*Call)

	// mu guards the fields below.
	mu sync.Mutex
	// questions are those put to the client and not answered yet, by the
	// key the client answers them under.
	questions map[string]*question
	seq       int
	// round counts the input_required results sent.
	round int
	// done, res and err are the call's end.
	done bool
	res  *mcp.CallToolResult
	err  error
	// gone is set when the call is abandoned, lapsed or exhausted: no
	// retry takes it.
	gone bool
	// released is set when the call went on as a task (Released), and
	// task is that task's id once known (BecameTask): a retry is told of
	// it rather than to call the tool again, which would run it twice.
	released bool
	task     string
	// changed is closed (and replaced) on every change of the above.
	changed chan struct{}
	// waiter is the client request waiting on the call now, if any.
	waiter *Waiter
	// lapse ends the call when no retry comes within wait of an
	// input_required result.
	lapse *time.Timer
	// failure is the error its server answered the call with (NoteFailure).
	failure error
	// missing is a capability the client did not declare that the call's
	// server asked for (NoteMissing).
	missing string
	// early is the answers the client sent with its first request, before
	// anything was asked, by key (takeEarly).
	early mcp.InputResponses
	// batch signals the waiting request RoundWait after a round's first
	// question, when the others are late (signalRoundLocked).
	batch *time.Timer
}

// question is one question of a call to its client.
type question struct {
	req   mcp.InputRequest
	reply chan mcp.InputResponse // buffered: answered at most once
}

// Waiter is a client request waiting on a held call: the call's progress
// and log messages go to it.
type Waiter struct {
	Ctx      context.Context //nolint:containedctx // the request waiting, whose stream takes the call's notifications
	Progress tools.Emitter   // nil: the client asked for none
}

// Hint is what is known of a question from a 2026-07-28 server: the key
// it asked under, and the number of questions in its round.
type Hint struct {
	Key  string
	Size int
}

// New returns the call c describes, its Waiter waiting on it.
func New(c Config) *Call {
	return &Call{
		id: c.ID, user: c.User, cancel: c.Cancel, bind: sync.OnceValue(c.Bind),
		rounds: c.Rounds, wait: c.Wait, lapsed: c.Lapsed,
		questions: map[string]*question{}, changed: make(chan struct{}), waiter: c.Waiter, early: maps.Clone(c.Early),
	}
}

type ctxKey struct{}

// NewContext returns a copy of ctx that carries c.
func NewContext(ctx context.Context, c *Call) context.Context {
	return context.WithValue(ctx, ctxKey{}, c)
}

// FromContext returns the call ctx carries, or nil.
func FromContext(ctx context.Context) *Call {
	c, _ := ctx.Value(ctxKey{}).(*Call)
	return c
}

// ID returns the call's id.
func (c *Call) ID() string { return c.id }

// User returns the call's user.
func (c *Call) User() string { return c.user }

// Bind returns what the call's requestStates are bound to.
func (c *Call) Bind() []byte { return c.bind() }

// Cancel cancels the call's run.
func (c *Call) Cancel() { c.cancel() }

func (c *Call) signalLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Current returns the request waiting on c, or nil.
func (c *Call) Current() *Waiter {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waiter
}

// Finish records the call's end.
func (c *Call) Finish(res *mcp.CallToolResult, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done, c.res, c.err = true, res, err
	c.signalLocked()
}

// Ask puts r to the client of c and waits for its answer, or ctx. It is
// asked under its server's key (hint) when there is one and it is free,
// else under one of the endpoint's; an answer the client gave under that
// key before it was asked (with its first request) is taken at once.
// Else hold is called first, to hold the call among those asking, and
// its error is Ask's.
func (c *Call) Ask(ctx context.Context, r mcp.InputRequest, hint Hint, hold func() error) (mcp.InputResponse, error) {
	if a, ok := c.takeEarly(hint.Key, r.Method); ok {
		return a, nil
	}
	if err := hold(); err != nil {
		return mcp.InputResponse{}, err
	}
	q := &question{req: r, reply: make(chan mcp.InputResponse, 1)}
	c.mu.Lock()
	key := hint.Key
	for key == "" || c.questions[key] != nil {
		c.seq++
		key = "elysia-" + strconv.Itoa(c.seq)
	}
	c.questions[key] = q
	c.signalRoundLocked(hint.Size)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.questions, key) // given up: not asked again
		c.mu.Unlock()
	}()
	select {
	case a := <-q.reply:
		return a, nil
	case <-ctx.Done():
		return mcp.InputResponse{}, ctx.Err()
	}
}

// signalRoundLocked tells the waiting request of a new question once the
// round's size questions are all asked, or RoundWait after the first.
func (c *Call) signalRoundLocked(size int) {
	if len(c.questions) >= size {
		if c.batch != nil {
			c.batch.Stop()
			c.batch = nil
		}
		c.signalLocked()
		return
	}
	if c.batch == nil {
		c.batch = time.AfterFunc(RoundWait, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.batch = nil
			c.signalLocked()
		})
	}
}

// takeEarly takes the answer the client sent under key with its first
// request, before it was asked, when it answers a question of method.
func (c *Call) takeEarly(key string, method mcp.MCPMethod) (mcp.InputResponse, bool) {
	if key == "" {
		return mcp.InputResponse{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.early[key]
	if !ok {
		return mcp.InputResponse{}, false
	}
	delete(c.early, key)
	err := a.DecodeFor(method)
	return a, err == nil
}

// Answer hands the client's answers of round to the questions that wait
// for them; an answer that does not decode leaves its question to be
// asked again. A call gone is an error matching ErrGone; answers of
// another round than the latest, one matching reqstate.ErrRefused.
func (c *Call) Answer(round int, rs mcp.InputResponses) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.gone:
		return c.goneLocked()
	case round != c.round:
		return fmt.Errorf("%w: it answers round %d of the call, which asked again since (round %d): send the latest", reqstate.ErrRefused, round, c.round)
	}
	c.handLocked(rs)
	return nil
}

// Hand hands the answers rs to the questions of c that wait for them,
// whatever the round (a task's answers); the others are dropped.
func (c *Call) Hand(rs mcp.InputResponses) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.handLocked(rs)
}

func (c *Call) handLocked(rs mcp.InputResponses) {
	for key, r := range rs {
		q := c.questions[key]
		if q == nil || r.DecodeFor(q.req.Method) != nil {
			continue
		}
		delete(c.questions, key)
		q.reply <- r
	}
}

// NoteFailure records that the call's server answered it with err (a
// protocol error, not a tool's).
func (c *Call) NoteFailure(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failure = err
}

// NoteMissing records that the call's server asked for capability, which
// the client did not declare.
func (c *Call) NoteMissing(capability string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.missing = capability
}

// Missing returns the capability NoteMissing recorded last, or "".
func (c *Call) Missing() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.missing
}

// Snapshot is a call's state at one time (Call.Snapshot).
type Snapshot struct {
	// Done, Result and Err are the call's end, once it ended.
	Done   bool
	Result *mcp.CallToolResult
	Err    error
	// Failure is what NoteFailure recorded.
	Failure error
	// Requests are the questions not answered yet, by key.
	Requests mcp.InputRequests
	// Changed is closed at the next change of the call.
	Changed <-chan struct{}
}

// Snapshot returns the state of c now.
func (c *Call) Snapshot() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Snapshot{Done: c.done, Result: c.res, Err: c.err, Failure: c.failure, Requests: c.requestsLocked(), Changed: c.changed}
}

func (c *Call) requestsLocked() mcp.InputRequests {
	reqs := make(mcp.InputRequests, len(c.questions))
	for key, q := range c.questions {
		reqs[key] = q.req
	}
	return reqs
}

// Event is what ended a request's wait on a call (Call.Await).
type Event int

// Events of Await.
const (
	// Ended: the call ended, with Next.Result and Next.Err. Nobody waits
	// on it any more.
	Ended Event = iota + 1
	// Asked: the call has questions for its client, Next.Requests, as
	// round Next.Round. Nobody waits on it: it waits Config.Wait for the
	// retry.
	Asked
	// Exhausted: the call has questions for its client past
	// Config.Rounds. It is gone, not cancelled yet.
	Exhausted
	// Released: the wait let go of the call, which goes on without
	// anybody waiting on it: grace came before the call's end or
	// questions, or the call ended and Await was asked to release it.
	Released
	// Left: the waiting request ended first (Await's error is its ctx's).
	// The call is as it was: see Abandon.
	Left
)

// Next is the event that ended a wait on a call (Call.Await), and what
// comes with it.
type Next struct {
	Event Event
	// Result and Err are the call's end (Ended).
	Result *mcp.CallToolResult
	Err    error
	// Round and Requests are the round and the questions of Asked.
	Round    int
	Requests mcp.InputRequests
}

// Await makes w the request waiting on c and waits for the call's next
// event: its end (Ended, or Released when releaseAtEnd), or questions for
// the client (Asked, or Exhausted). A request waiting before gives way,
// and the lapse of a call left waiting for its retry stops. grace, when
// it is ready before either (nil: never), releases the call (Released).
// A call gone already is an error matching ErrGone; a request another
// took the call from gets ErrTakenOver; one whose ctx ends first, Left
// and the ctx's error.
func (c *Call) Await(ctx context.Context, w *Waiter, grace <-chan time.Time, releaseAtEnd bool) (Next, error) {
	if err := c.claim(w); err != nil {
		return Next{}, err
	}
	for {
		switch {
		case c.waiter != w:
			c.mu.Unlock()
			return Next{}, ErrTakenOver
		case c.done && !releaseAtEnd:
			next := Next{Event: Ended, Result: c.res, Err: c.err}
			c.waiter = nil
			c.mu.Unlock()
			return next, nil
		case !c.done && len(c.questions) > 0:
			return c.suspendLocked(), nil // unlocks
		case c.done:
			return c.releaseLocked(), nil // unlocks
		}
		changed := c.changed
		c.mu.Unlock()
		select {
		case <-changed:
		case <-grace:
			c.mu.Lock()
			if c.waiter == w && len(c.questions) == 0 && !c.done { // a call that ended is Ended, never a task
				return c.releaseLocked(), nil // unlocks
			}
			continue
		case <-ctx.Done():
			return Next{Event: Left}, ctx.Err()
		}
		c.mu.Lock()
	}
}

// claim makes w the request waiting on c, and leaves c.mu held; a call
// already gone is an error, with c.mu unlocked. A request waiting before
// gives way, and the lapse timer of a call left waiting for its retry
// stops.
func (c *Call) claim(w *Waiter) error {
	c.mu.Lock()
	if c.gone {
		err := c.goneLocked()
		c.mu.Unlock()
		return err
	}
	if c.lapse != nil {
		c.lapse.Stop()
		c.lapse = nil
	}
	if c.waiter != w {
		c.waiter = w
		c.signalLocked()
	}
	return nil
}

// releaseLocked lets go of c (Released): it goes on as a task, which
// hands it its answers (Hand), so it is gone to any retry of a round (a
// replayed requestState would make a second task of it). c.mu is held,
// and unlocked.
func (c *Call) releaseLocked() Next {
	c.waiter, c.gone, c.released = nil, true, true
	c.mu.Unlock()
	return Next{Event: Released}
}

// BecameTask records the id of the task the call went on as.
func (c *Call) BecameTask(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.task = id
}

// goneLocked is the error of a request for c, gone; c.mu is held. A call
// that went on as a task still runs: the client is pointed at the task.
func (c *Call) goneLocked() error {
	switch {
	case c.task != "":
		return fmt.Errorf("%w: it goes on as task %s: read its result with tasks/get (a new call would run the tool a second time)", ErrGone, c.task)
	case c.released:
		return fmt.Errorf("%w: it is going on as a task: send this request again in a moment to learn the task's id (a new call would run the tool a second time)", ErrGone)
	}
	return fmt.Errorf("%w: call the tool again", ErrGone)
}

// suspendLocked gives the questions c has for its client in a new round
// (Asked), and leaves the call waiting c.wait for the retry; past
// c.rounds the call is gone instead (Exhausted). c.mu is held, and
// unlocked.
func (c *Call) suspendLocked() Next {
	if c.round >= c.rounds {
		c.waiter, c.gone = nil, true
		c.mu.Unlock()
		return Next{Event: Exhausted}
	}
	c.round++
	round := c.round
	reqs := c.requestsLocked()
	c.waiter = nil
	c.lapse = time.AfterFunc(c.wait, func() { c.lapseRound(round) })
	c.mu.Unlock()
	return Next{Event: Asked, Round: round, Requests: reqs}
}

// lapseRound ends c, gone, when its client has not come back with the
// answers of round in time, and tells Config.Lapsed.
func (c *Call) lapseRound(round int) {
	c.mu.Lock()
	idle := c.waiter == nil && c.round == round && !c.gone
	if idle {
		c.gone = true
	}
	c.mu.Unlock()
	if idle && c.lapsed != nil {
		c.lapsed(c)
	}
}

// StopLapse stops the timer that ends a call waiting for its retry, if
// it runs.
func (c *Call) StopLapse() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lapse != nil {
		c.lapse.Stop()
	}
}

// Abandon ends c when w, the request waiting on it, ended first (its
// client left) and the call is not done, and reports whether it did: the
// call is gone, to be cancelled and forgotten.
func (c *Call) Abandon(w *Waiter) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	mine := c.waiter == w && !c.done
	if mine {
		c.waiter, c.gone = nil, true
	}
	return mine
}
