package held

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpendpoint/internal/reqstate"
)

// newCall returns a call of alice with w waiting on it, at most rounds
// rounds, lapsing after wait (lapsed, if not nil, is told).
func newCall(t *testing.T, w *Waiter, rounds int, wait time.Duration, lapsed func(*Call)) (*Call, *bool) {
	t.Helper()
	cancelled := new(bool)
	c := New(Config{ID: NewID(), User: "alice", Cancel: func() { *cancelled = true }, Waiter: w,
		Bind: func() []byte { return []byte("bound") }, Rounds: rounds, Wait: wait, Lapsed: lapsed})
	return c, cancelled
}

// form is a question of elicitation.
func form(msg string) mcp.InputRequest {
	return mcp.NewElicitationInputRequest(mcp.ElicitationParams{Message: msg})
}

// reply is a client's answer as it arrives: JSON, decoded when handed.
func reply(t *testing.T, text string) mcp.InputResponse {
	t.Helper()
	var r mcp.InputResponse
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

var accept = `{"action":"accept","content":{"city":"Paris"}}`

// asked is the outcome of an Ask on its goroutine.
type asked struct {
	r   mcp.InputResponse
	err error
}

// ask runs c.Ask on a goroutine; the question is asked, not answered,
// when it returns.
func ask(t *testing.T, ctx context.Context, c *Call, r mcp.InputRequest, hint Hint) <-chan asked {
	t.Helper()
	n := len(c.Snapshot().Requests)
	out := make(chan asked, 1)
	go func() {
		a, err := c.Ask(ctx, r, hint, func() error { return nil })
		out <- asked{a, err}
	}()
	waitFor(t, func() bool { return len(c.Snapshot().Requests) > n })
	return out
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

func recv[T any](t *testing.T, c <-chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("timed out")
		panic("unreachable")
	}
}

// TestRounds: a question is the waiting request's Asked, under a key of
// the endpoint's; the answers of its round reach it, and the call's end is
// the next request's Ended.
func TestRounds(t *testing.T) {
	w := &Waiter{Ctx: t.Context()}
	c, _ := newCall(t, w, 4, time.Minute, nil)
	if c.Current() != w {
		t.Fatal("the first request does not wait on the call")
	}
	got := ask(t, t.Context(), c, form("where?"), Hint{})
	next, err := c.Await(t.Context(), w, nil, false)
	if err != nil || next.Event != Asked || next.Round != 1 || len(next.Requests) != 1 || next.Requests["elysia-1"].Elicitation == nil {
		t.Fatalf("Await = %+v, %v; want round 1 of one question, elysia-1", next, err)
	}
	if c.Current() != nil {
		t.Error("a request still waits on the call after Asked")
	}
	if err := c.Answer(0, mcp.InputResponses{"elysia-1": reply(t, accept)}); !errors.Is(err, reqstate.ErrRefused) {
		t.Errorf("the answers of round 0: %v, want ErrRefused", err)
	}
	if err := c.Answer(1, mcp.InputResponses{"elysia-1": reply(t, accept), "other": reply(t, accept)}); err != nil {
		t.Fatal(err)
	}
	a := recv(t, got)
	if a.err != nil || a.r.Elicitation == nil || a.r.Elicitation.Action != mcp.ElicitationResponseActionAccept {
		t.Fatalf("Ask = %+v, want the decoded answer", a)
	}
	want := &mcp.CallToolResult{}
	c.Finish(want, nil)
	w2 := &Waiter{Ctx: t.Context()}
	next, err = c.Await(t.Context(), w2, nil, false)
	if err != nil || next.Event != Ended || next.Result != want || next.Err != nil {
		t.Fatalf("Await = %+v, %v; want Ended with the result", next, err)
	}
	if c.Current() != nil {
		t.Error("a request still waits on the call after Ended")
	}
}

// TestUndecodable: an answer that does not decode leaves its question to
// be asked again.
func TestUndecodable(t *testing.T) {
	w := &Waiter{Ctx: t.Context()}
	c, _ := newCall(t, w, 4, time.Minute, nil)
	ask(t, t.Context(), c, form("where?"), Hint{Key: "k"})
	if next, _ := c.Await(t.Context(), w, nil, false); next.Event != Asked {
		t.Fatalf("Await = %+v, want Asked", next)
	}
	if err := c.Answer(1, mcp.InputResponses{"k": reply(t, `"no"`)}); err != nil {
		t.Fatal(err)
	}
	if reqs := c.Snapshot().Requests; len(reqs) != 1 || reqs["k"].Method != mcp.MethodElicitationCreate {
		t.Errorf("questions %v, want k still asked", reqs)
	}
}

// TestKeys: a question goes under its server's key while that is free,
// else under one of the endpoint's.
func TestKeys(t *testing.T) {
	c, _ := newCall(t, nil, 4, time.Minute, nil)
	ask(t, t.Context(), c, form("1"), Hint{Key: "k", Size: 1})
	ask(t, t.Context(), c, form("2"), Hint{Key: "k", Size: 1})
	ask(t, t.Context(), c, form("3"), Hint{Size: 1})
	reqs := c.Snapshot().Requests
	for key, msg := range map[string]string{"k": "1", "elysia-1": "2", "elysia-2": "3"} {
		if r, ok := reqs[key]; !ok || r.Elicitation.Message != msg {
			t.Errorf("question %q: %+v, want %q", key, r, msg)
		}
	}
}

// TestGivenUp: a question whose asker gave up is not asked any more.
func TestGivenUp(t *testing.T) {
	c, _ := newCall(t, nil, 4, time.Minute, nil)
	ctx, cancel := context.WithCancel(t.Context())
	got := ask(t, ctx, c, form("where?"), Hint{})
	cancel()
	if a := recv(t, got); !errors.Is(a.err, context.Canceled) {
		t.Errorf("Ask = %v, want its ctx's error", a.err)
	}
	if reqs := c.Snapshot().Requests; len(reqs) != 0 {
		t.Errorf("questions %v, want none", reqs)
	}
}

// TestEarly: an answer the client sent before it was asked answers the
// question of its key at once, if it decodes, and only once.
func TestEarly(t *testing.T) {
	early := mcp.InputResponses{"k": reply(t, accept), "bad": reply(t, `"no"`)}
	c := New(Config{ID: "c", User: "alice", Cancel: func() {}, Early: early, Bind: func() []byte { return nil }, Rounds: 4, Wait: time.Minute})
	held := 0
	hold := func() error { held++; return errors.New("held") }
	a, err := c.Ask(t.Context(), form("where?"), Hint{Key: "k"}, hold)
	if err != nil || held != 0 || a.Elicitation == nil || a.Elicitation.Action != mcp.ElicitationResponseActionAccept {
		t.Fatalf("Ask = %+v, %v (held %d); want the early answer, decoded, unheld", a, err, held)
	}
	if _, err := c.Ask(t.Context(), form("where?"), Hint{Key: "k"}, hold); err == nil || held != 1 {
		t.Errorf("Ask again = %v (held %d), want it held (hold's error)", err, held)
	}
	if _, err := c.Ask(t.Context(), form("where?"), Hint{Key: "bad"}, hold); err == nil || held != 2 {
		t.Errorf("Ask of an early answer that does not decode = %v (held %d), want it held", err, held)
	}
	if _, err := c.Ask(t.Context(), form("where?"), Hint{}, hold); err == nil || held != 3 {
		t.Errorf("Ask without a key = %v (held %d), want it held", err, held)
	}
	if len(early) != 2 {
		t.Error("New did not copy the early answers")
	}
}

// TestRoundBatch: the first question of a round of two tells the waiting
// request only with the second, or RoundWait after it.
func TestRoundBatch(t *testing.T) {
	c, _ := newCall(t, nil, 4, time.Minute, nil)
	changed := c.Snapshot().Changed
	ask(t, t.Context(), c, form("1"), Hint{Key: "a", Size: 2})
	select {
	case <-changed:
		t.Fatal("the first question of two was told at once")
	default:
	}
	ask(t, t.Context(), c, form("2"), Hint{Key: "b", Size: 2})
	select {
	case <-changed:
	default:
		t.Fatal("the second question of two was not told")
	}

	c, _ = newCall(t, nil, 4, time.Minute, nil)
	changed = c.Snapshot().Changed
	start := time.Now()
	ask(t, t.Context(), c, form("1"), Hint{Key: "a", Size: 2})
	recv(t, changed)
	if d := time.Since(start); d < RoundWait {
		t.Errorf("the lone question was told after %v, want RoundWait (%v)", d, RoundWait)
	}
}

// TestExhausted: a question past the rounds ends the call.
func TestExhausted(t *testing.T) {
	w := &Waiter{Ctx: t.Context()}
	c, _ := newCall(t, w, 1, time.Minute, nil)
	ask(t, t.Context(), c, form("1"), Hint{Key: "a"})
	if next, _ := c.Await(t.Context(), w, nil, false); next.Event != Asked {
		t.Fatalf("Await = %+v, want Asked", next)
	}
	if err := c.Answer(1, mcp.InputResponses{"a": reply(t, accept)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(c.Snapshot().Requests) == 0 })
	ask(t, t.Context(), c, form("2"), Hint{Key: "b"})
	if next, err := c.Await(t.Context(), w, nil, false); err != nil || next.Event != Exhausted {
		t.Fatalf("Await = %+v, %v; want Exhausted", next, err)
	}
	if err := c.Answer(1, nil); !errors.Is(err, ErrGone) {
		t.Errorf("Answer = %v, want ErrGone", err)
	}
	if _, err := c.Await(t.Context(), w, nil, false); !errors.Is(err, ErrGone) {
		t.Errorf("Await = %v, want ErrGone", err)
	}
}

// TestLapse: a call whose client does not come back within Wait is gone,
// and Lapsed told; one whose client comes back in time is not.
func TestLapse(t *testing.T) {
	lapsed := make(chan *Call, 1)
	w := &Waiter{Ctx: t.Context()}
	c, _ := newCall(t, w, 4, 10*time.Millisecond, func(c *Call) { lapsed <- c })
	ask(t, t.Context(), c, form("1"), Hint{})
	if next, _ := c.Await(t.Context(), w, nil, false); next.Event != Asked {
		t.Fatalf("Await = %+v, want Asked", next)
	}
	if got := recv(t, lapsed); got != c {
		t.Fatal("Lapsed was told of another call")
	}
	if err := c.Answer(1, nil); !errors.Is(err, ErrGone) {
		t.Errorf("Answer = %v, want ErrGone", err)
	}

	c, _ = newCall(t, w, 4, 50*time.Millisecond, func(c *Call) { lapsed <- c })
	ask(t, t.Context(), c, form("1"), Hint{Key: "a"})
	if next, _ := c.Await(t.Context(), w, nil, false); next.Event != Asked {
		t.Fatalf("Await = %+v, want Asked", next)
	}
	if err := c.Answer(1, mcp.InputResponses{"a": reply(t, accept)}); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(150*time.Millisecond, func() { c.Finish(nil, errors.New("over")) })
	if next, err := c.Await(t.Context(), w, nil, false); err != nil || next.Event != Ended || next.Err == nil {
		t.Fatalf("Await = %+v, %v; want Ended with the call's error", next, err)
	}
	select {
	case <-lapsed:
		t.Error("a call whose client came back lapsed")
	default:
	}

	c, _ = newCall(t, w, 4, 20*time.Millisecond, func(c *Call) { lapsed <- c })
	ask(t, t.Context(), c, form("1"), Hint{})
	if next, _ := c.Await(t.Context(), w, nil, false); next.Event != Asked {
		t.Fatalf("Await = %+v, want Asked", next)
	}
	c.StopLapse()
	time.Sleep(60 * time.Millisecond)
	select {
	case <-lapsed:
		t.Error("a call lapsed after StopLapse")
	default:
	}
}

// TestReleased: grace before any event releases the call, as does its
// end when Await is asked to.
func TestReleased(t *testing.T) {
	w := &Waiter{Ctx: t.Context()}
	c, _ := newCall(t, w, 4, time.Minute, nil)
	grace := make(chan time.Time, 1)
	grace <- time.Now()
	if next, err := c.Await(t.Context(), w, grace, false); err != nil || next.Event != Released {
		t.Fatalf("Await = %+v, %v; want Released", next, err)
	}
	if c.Current() != nil {
		t.Error("a request still waits on the released call")
	}
	// It is a task now: a replayed retry of its round finds it gone, and
	// makes no second task of it.
	if _, err := c.Await(t.Context(), &Waiter{Ctx: t.Context()}, nil, false); !errors.Is(err, ErrGone) {
		t.Errorf("Await after Released = %v; want ErrGone", err)
	}
	if err := c.Answer(0, nil); !errors.Is(err, ErrGone) {
		t.Errorf("Answer after Released = %v; want ErrGone", err)
	}
	// The call still runs, as a task: a retry is pointed at it, never told
	// to call the tool again (which would run it twice).
	err := c.Answer(0, nil)
	if strings.Contains(err.Error(), "call the tool again") || !strings.Contains(err.Error(), "as a task") {
		t.Errorf("Answer after Released, before the task's id: %v", err)
	}
	c.BecameTask("task-7")
	if _, err := c.Await(t.Context(), &Waiter{Ctx: t.Context()}, nil, false); !errors.Is(err, ErrGone) ||
		strings.Contains(err.Error(), "call the tool again") || !strings.Contains(err.Error(), "task task-7") {
		t.Errorf("Await after the task was made = %v; want ErrGone naming task-7", err)
	}

	c, _ = newCall(t, w, 4, time.Minute, nil)
	c.Finish(&mcp.CallToolResult{}, nil)
	if next, err := c.Await(t.Context(), w, nil, true); err != nil || next.Event != Released {
		t.Fatalf("Await = %+v, %v; want Released", next, err)
	}
}

// TestLeft: a request that ends first leaves the call; Abandon ends it,
// unless it is done or another request waits on it.
func TestLeft(t *testing.T) {
	w := &Waiter{Ctx: t.Context()}
	c, cancelled := newCall(t, w, 4, time.Minute, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	next, err := c.Await(ctx, w, nil, false)
	if next.Event != Left || !errors.Is(err, context.Canceled) {
		t.Fatalf("Await = %+v, %v; want Left with ctx's error", next, err)
	}
	if c.Abandon(&Waiter{}) {
		t.Error("Abandon of a request not waiting ended the call")
	}
	if !c.Abandon(w) {
		t.Fatal("Abandon did not end the call")
	}
	if *cancelled {
		t.Error("Abandon cancelled the call itself")
	}
	if _, err := c.Await(t.Context(), w, nil, false); !errors.Is(err, ErrGone) {
		t.Errorf("Await of the abandoned call = %v, want ErrGone", err)
	}
	c.Cancel()
	if !*cancelled {
		t.Error("Cancel did not cancel the call")
	}

	c, _ = newCall(t, w, 4, time.Minute, nil)
	c.Finish(nil, nil)
	if c.Abandon(w) {
		t.Error("Abandon ended a call done")
	}
}

// TestTakenOver: a request that takes over the call from another ends
// that one's wait.
func TestTakenOver(t *testing.T) {
	w1, w2 := &Waiter{Ctx: t.Context()}, &Waiter{Ctx: t.Context()}
	c, _ := newCall(t, nil, 4, time.Minute, nil)
	first := make(chan error, 1)
	go func() {
		_, err := c.Await(t.Context(), w1, nil, false)
		first <- err
	}()
	waitFor(t, func() bool { return c.Current() == w1 })
	second := make(chan Next, 1)
	go func() {
		next, _ := c.Await(t.Context(), w2, nil, false)
		second <- next
	}()
	if err := recv(t, first); !errors.Is(err, ErrTakenOver) {
		t.Fatalf("the first request's Await = %v, want ErrTakenOver", err)
	}
	if c.Current() != w2 {
		t.Fatal("the second request does not wait on the call")
	}
	c.Finish(nil, nil)
	if next := recv(t, second); next.Event != Ended {
		t.Errorf("the second request's Await = %+v, want Ended", next)
	}
}

// TestHand: a task's answers reach their questions whatever the round.
func TestHand(t *testing.T) {
	c, _ := newCall(t, nil, 4, time.Minute, nil)
	got := ask(t, t.Context(), c, form("1"), Hint{Key: "a"})
	c.Hand(mcp.InputResponses{"a": reply(t, accept), "b": reply(t, accept)})
	if a := recv(t, got); a.err != nil || a.r.Elicitation == nil {
		t.Errorf("Ask = %+v, want the answer", a)
	}
}

// TestNotes: what is noted of a call, its identity and its context.
func TestNotes(t *testing.T) {
	c, _ := newCall(t, nil, 4, time.Minute, nil)
	if c.User() != "alice" || len(c.ID()) != 32 || string(c.Bind()) != "bound" {
		t.Errorf("ID %q, User %q, Bind %q", c.ID(), c.User(), c.Bind())
	}
	if c.Missing() != "" {
		t.Errorf("Missing = %q, want none", c.Missing())
	}
	c.NoteMissing("sampling")
	if c.Missing() != "sampling" {
		t.Errorf("Missing = %q, want sampling", c.Missing())
	}
	failure := errors.New("the server failed")
	c.NoteFailure(failure)
	if s := c.Snapshot(); s.Failure != failure || s.Done {
		t.Errorf("Snapshot = %+v, want the failure, not done", s)
	}
	if FromContext(t.Context()) != nil || FromContext(NewContext(t.Context(), c)) != c {
		t.Error("FromContext does not give the call NewContext put")
	}
	if id1, id2 := NewID(), NewID(); id1 == id2 {
		t.Error("NewID repeats")
	}
}
