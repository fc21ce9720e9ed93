package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
)

// holdWriter makes the SQLite store s's writer wait inside the save of
// query "hold" (conversation "held" of alice, 3 events) until the returned
// release is called (or t ends), so that the saves started meanwhile queue
// up. It returns once the writer is held, and wait waits for the held
// save's result. The queued saves must have 3 events too: a save whose
// statements are not prepared yet waits for the connection to prepare them,
// which the writer holds.
func holdWriter(t *testing.T, s *Store, hook func(queryID string, i int) error) (release func(), wait func() error) {
	t.Helper()
	held, let := make(chan struct{}), make(chan struct{})
	release = sync.OnceFunc(func() { close(let) })
	t.Cleanup(release)
	reached := sync.OnceFunc(func() { close(held) })
	s.beforeEvent = func(queryID string, i int) error {
		if queryID == "hold" {
			if i == 0 {
				reached()
				<-let
			}
			return nil
		}
		return hook(queryID, i)
	}
	errc := make(chan error, 1)
	go func() {
		errc <- s.SaveQuery(context.Background(), &Conversation{UserID: "alice", ID: "held"}, turn(`["hold"]`), "hold", envelopes("hold", 3))
	}()
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the held save never reached the writer")
	}
	return release, func() error { return <-errc }
}

// waitQueued waits until n saves wait for s's writer.
func waitQueued(t *testing.T, s *Store, n int64) {
	t.Helper()
	testenv.WaitFor(t, 10*time.Second, fmt.Sprintf("%d saves to queue", n), func() bool {
		return s.group.queued.Load() >= n
	})
}

// Saves that queue while the writer is busy are committed together: one
// that fails and one whose caller gave up leave no trace, and the others
// are saved whole, once.
func TestGroupCommit(t *testing.T) {
	s := openStore(t, sqliteTestDSN(t))
	boom := errors.New("injected failure")
	release, held := holdWriter(t, s, func(queryID string, i int) error {
		if queryID == "bad" && i == 1 {
			return boom
		}
		return nil
	})

	const n = 20
	type result struct {
		id  string
		err error
	}
	results := make(chan result, n)
	var wg sync.WaitGroup
	goneCtx, giveUp := context.WithCancel(t.Context())
	defer giveUp()
	for i := range n {
		id, ctx := fmt.Sprintf("c%d", i), t.Context()
		switch i {
		case 3:
			id = "bad"
		case 7:
			id, ctx = "gone", goneCtx
		}
		wg.Go(func() {
			c := &Conversation{UserID: "alice", ID: id, Title: id}
			results <- result{id, s.SaveQuery(ctx, c, turn(fmt.Sprintf(`[%q]`, id)), id, envelopes(id, 3))}
		})
	}
	waitQueued(t, s, n)
	giveUp()
	if r := <-results; r.id != "gone" {
		t.Fatalf("%s returned while the writer was held: %v", r.id, r.err)
	} else if !errors.Is(r.err, context.Canceled) {
		t.Errorf("gone: got %v, want context.Canceled", r.err)
	}
	commits := s.group.commits.Load()
	release()
	if err := held(); err != nil {
		t.Fatalf("held save: %v", err)
	}
	wg.Wait()
	close(results)
	for r := range results {
		switch {
		case r.id == "bad" && !errors.Is(r.err, boom):
			t.Errorf("bad: got %v, want the injected failure", r.err)
		case r.id != "bad" && r.err != nil:
			t.Errorf("%s: %v", r.id, r.err)
		}
	}
	for _, id := range []string{"bad", "gone"} {
		if _, err := s.GetConversation(t.Context(), "alice", id); !errors.Is(err, ErrNotFound) {
			t.Errorf("conversation %s: got %v, want ErrNotFound", id, err)
		}
	}
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		if i == 3 || i == 7 {
			continue
		}
		c := mustGet(t, s, "alice", id)
		if h := history(t, s, "alice", id); c.Title != id || c.Version != 1 || c.Turns != 1 || h != fmt.Sprintf(`[%q]`, id) {
			t.Errorf("%s: title %q, version %d, %d turns, history %s", id, c.Title, c.Version, c.Turns, h)
		}
		if evs := mustEvents(t, s, "alice", id); len(evs) != 3 {
			t.Errorf("%s: %d events, want 3", id, len(evs))
		}
	}
	// The held save's commit, then the queued 18 in as few as the
	// scheduler allows; one each would be 18.
	if got := s.group.commits.Load() - commits; got > 6 {
		t.Errorf("%d commits for 18 queued saves, want them grouped", got)
	}
}

// Close lets the writer finish the transaction it is running; saves still
// waiting get ErrClosed and nothing is written for them.
func TestGroupCommitClose(t *testing.T) {
	dsn := sqliteTestDSN(t)
	s, err := Open(t.Context(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	release, held := holdWriter(t, s, func(string, int) error { return nil })
	errc := make(chan error, 1)
	go func() {
		errc <- s.SaveQuery(t.Context(), &Conversation{UserID: "alice", ID: "late"}, turn(`["late"]`), "late", envelopes("late", 3))
	}()
	waitQueued(t, s, 1)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("a save waiting at Close: got %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a save waiting at Close did not return")
	}
	release()
	if err := held(); err != nil {
		t.Errorf("the save running at Close: %v", err)
	}
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
	s = openStore(t, dsn)
	if _, err := s.GetConversation(t.Context(), "alice", "held"); err != nil {
		t.Errorf("the save running at Close was not kept: %v", err)
	}
	if _, err := s.GetConversation(t.Context(), "alice", "late"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the save refused at Close: got %v, want ErrNotFound", err)
	}
}

// A save whose write has started runs to the end, in a rerun too: its
// caller giving up after that does not drop it.
func TestGroupCommitRerunKeepsStartedSave(t *testing.T) {
	s := openStore(t, sqliteTestDSN(t))
	boom := errors.New("injected failure")
	aCtx, cancelA := context.WithCancel(t.Context())
	defer cancelA()
	release, held := holdWriter(t, s, func(queryID string, i int) error {
		switch {
		case queryID == "a" && i == 2:
			cancelA() // its write has started
		case queryID == "bad" && i == 2:
			return boom // after "a" in the group, so "a" is rerun
		}
		return nil
	})
	errA, errBad := make(chan error, 1), make(chan error, 1)
	go func() {
		errA <- s.SaveQuery(aCtx, &Conversation{UserID: "alice", ID: "a"}, turn(`["a"]`), "a", envelopes("a", 3))
	}()
	waitQueued(t, s, 1)
	go func() {
		errBad <- s.SaveQuery(t.Context(), &Conversation{UserID: "alice", ID: "bad"}, turn(`["bad"]`), "bad", envelopes("bad", 3))
	}()
	waitQueued(t, s, 2)
	release()
	if err := held(); err != nil {
		t.Fatal(err)
	}
	if err := <-errBad; !errors.Is(err, boom) {
		t.Fatalf("bad: got %v, want the injected failure", err)
	}
	if err := <-errA; err != nil {
		t.Fatalf("a, rerun after its caller gave up: %v", err)
	}
	if h := history(t, s, "alice", "a"); h != `["a"]` {
		t.Errorf("a's history %s", h)
	}
}

// A save that panics panics in its caller, as it did before saves had a
// writer; the writer goes on, and the other saves of its group commit.
func TestGroupCommitPanicReachesCaller(t *testing.T) {
	s := openStore(t, sqliteTestDSN(t))
	release, held := holdWriter(t, s, func(queryID string, i int) error {
		if queryID == "boom" {
			panic("boom")
		}
		return nil
	})
	panicked, errOK := make(chan any, 1), make(chan error, 1)
	go func() {
		defer func() { panicked <- recover() }()
		_ = s.SaveQuery(t.Context(), &Conversation{UserID: "alice", ID: "boom"}, turn(`["boom"]`), "boom", envelopes("boom", 3))
	}()
	waitQueued(t, s, 1)
	go func() {
		errOK <- s.SaveQuery(t.Context(), &Conversation{UserID: "alice", ID: "ok"}, turn(`["ok"]`), "ok", envelopes("ok", 3))
	}()
	waitQueued(t, s, 2)
	release()
	if err := held(); err != nil {
		t.Fatal(err)
	}
	if p := <-panicked; p != "boom" {
		t.Errorf("the panicking save's caller recovered %v, want boom", p)
	}
	if err := <-errOK; err != nil {
		t.Errorf("the other save: %v", err)
	}
	if err := s.SaveQuery(t.Context(), &Conversation{UserID: "alice", ID: "after"}, nil, "after", envelopes("after", 3)); err != nil {
		t.Errorf("a save after the panic: %v", err)
	}
}
