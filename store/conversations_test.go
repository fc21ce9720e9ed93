package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// envelopes returns n distinct event envelopes of query q.
func envelopes(q string, n int) []json.RawMessage {
	out := make([]json.RawMessage, n)
	for i := range out {
		out[i] = json.RawMessage(fmt.Sprintf(`{"type": "status", "query_id": %q, "payload": {"n": %d}}`, q, i))
	}
	return out
}

func mustEvents(t *testing.T, s *Store, user, conv string) []Event {
	t.Helper()
	events, err := s.Events(t.Context(), user, conv)
	if err != nil {
		t.Fatalf("Events(%s, %s): %v", user, conv, err)
	}
	return events
}

func mustGet(t *testing.T, s *Store, user, conv string) *Conversation {
	t.Helper()
	c, err := s.GetConversation(t.Context(), user, conv)
	if err != nil {
		t.Fatalf("GetConversation(%s, %s): %v", user, conv, err)
	}
	return c
}

func testRoundTrip(t *testing.T, newDSN newDSN) {
	t.Helper()
	s := openStore(t, newDSN(t))
	ctx := t.Context()
	created := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	// Odd spacing and key order must survive: the tree JSON's key order matters.
	want := &Conversation{
		UserID:      "alice",
		ID:          "c1",
		Title:       "Buy milk ✓",
		InitMode:    "multi_branch",
		TreeOps:     json.RawMessage(`[{"op": "add",  "z": 1, "a": 2}]`),
		History:     json.RawMessage(`[{"role":"user","content":"hi \u0000 \"there\""}]`),
		Environment: json.RawMessage(`{"mcp_todo": {"list": [1, 2.50, "x"]}}`),
		CreatedAt:   created,
	}
	if err := s.SaveConversation(ctx, want); err != nil {
		t.Fatalf("SaveConversation: %v", err)
	}
	if !want.CreatedAt.Equal(created) || want.UpdatedAt.IsZero() {
		t.Errorf("after save: CreatedAt %v, UpdatedAt %v; want %v and now", want.CreatedAt, want.UpdatedAt, created)
	}
	got := mustGet(t, s, "alice", "c1")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GetConversation mismatch (-want +got):\n%s", diff)
	}

	// Absent blobs stay absent.
	bare := &Conversation{UserID: "alice", ID: "c2"}
	if err := s.SaveQuery(ctx, bare, "q1", nil); err != nil {
		t.Fatalf("SaveQuery: %v", err)
	}
	got = mustGet(t, s, "alice", "c2")
	if got.TreeOps != nil || got.History != nil || got.Environment != nil || got.Title != "" {
		t.Errorf("bare conversation came back as %+v", got)
	}
	if events := mustEvents(t, s, "alice", "c2"); events == nil || len(events) != 0 {
		t.Errorf("Events of a conversation without events = %#v, want empty and non-nil", events)
	}

	if _, err := s.GetConversation(ctx, "alice", "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetConversation of a missing conversation: got %v, want ErrNotFound", err)
	}
	if _, err := s.Events(ctx, "alice", "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Events of a missing conversation: got %v, want ErrNotFound", err)
	}
}

func testLargeBlobs(t *testing.T, newDSN newDSN) {
	t.Helper()
	s := openStore(t, newDSN(t))
	big := func(c byte) json.RawMessage {
		return json.RawMessage(`"` + strings.Repeat(string(c), 1<<20) + `"`)
	}
	c := &Conversation{UserID: "alice", ID: "c1", History: big('h'), Environment: big('e')}
	if err := s.SaveQuery(t.Context(), c, "q1", []json.RawMessage{big('1'), big('2')}); err != nil {
		t.Fatalf("SaveQuery: %v", err)
	}
	got := mustGet(t, s, "alice", "c1")
	if string(got.History) != string(c.History) || string(got.Environment) != string(c.Environment) {
		t.Error("1 MiB history or environment did not round-trip")
	}
	events := mustEvents(t, s, "alice", "c1")
	if len(events) != 2 || string(events[0].Envelope) != string(big('1')) || string(events[1].Envelope) != string(big('2')) {
		t.Error("1 MiB events did not round-trip")
	}
}

func testUsers(t *testing.T, newDSN newDSN) {
	t.Helper()
	s := openStore(t, newDSN(t))
	ctx := t.Context()
	if _, err := s.GetUser(ctx, "alice"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetUser before EnsureUser: got %v, want ErrNotFound", err)
	}
	for i, want := range []bool{false, true} {
		existed, err := s.EnsureUser(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if existed != want {
			t.Errorf("EnsureUser call %d: existed = %v, want %v", i+1, existed, want)
		}
	}
	u, err := s.GetUser(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if u.Config != nil || u.CreatedAt.IsZero() {
		t.Errorf("new user = %+v, want no config and a creation time", u)
	}
	u.Config = json.RawMessage(`{"model": "offline", "a": [1]}`)
	if err := s.SaveUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetUser(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(u, got); diff != "" {
		t.Errorf("GetUser mismatch (-want +got):\n%s", diff)
	}
	// Saving a conversation creates its user.
	if err := s.SaveConversation(ctx, &Conversation{UserID: "bob", ID: "c1"}); err != nil {
		t.Fatal(err)
	}
	if existed, err := s.EnsureUser(ctx, "bob"); err != nil || !existed {
		t.Errorf("EnsureUser(bob) after saving bob's conversation = %v, %v; want true", existed, err)
	}
}

func testSaveConversationKeepsQueryState(t *testing.T, newDSN newDSN) {
	t.Helper()
	s := openStore(t, newDSN(t))
	ctx := t.Context()
	stale := &Conversation{UserID: "alice", ID: "c1", InitMode: "one_branch"}
	if err := s.SaveConversation(ctx, stale); err != nil {
		t.Fatal(err)
	}
	fresh := *stale
	fresh.Title, fresh.History, fresh.Environment = "T", json.RawMessage(`["q1"]`), json.RawMessage(`{"r": 1}`)
	if err := s.SaveQuery(ctx, &fresh, "q1", envelopes("q1", 1)); err != nil {
		t.Fatal(err)
	}
	// The tree API saves its change from a copy taken before the query,
	// whose title is still empty.
	stale.TreeOps = json.RawMessage(`[{"op": "add"}]`)
	if err := s.SaveConversation(ctx, stale); err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, s, "alice", "c1")
	if got.Title != "T" {
		t.Errorf("title %q after a stale tree change, want the query's %q", got.Title, "T")
	}
	if string(got.History) != `["q1"]` || string(got.Environment) != `{"r": 1}` || string(got.TreeOps) != `[{"op": "add"}]` {
		t.Errorf("got history %s, environment %s, tree ops %s; want the query's state and the tree op", got.History, got.Environment, got.TreeOps)
	}
}

func testSaveQueryAtomic(t *testing.T, newDSN newDSN) {
	t.Helper()
	s := openStore(t, newDSN(t))
	ctx := t.Context()
	boom := errors.New("injected failure")
	s.beforeEvent = func(i int) error {
		if i == 2 {
			return boom
		}
		return nil
	}

	// A new conversation: nothing of it may remain.
	c := &Conversation{UserID: "alice", ID: "new", History: json.RawMessage(`["q1"]`)}
	if err := s.SaveQuery(ctx, c, "q1", envelopes("q1", 4)); !errors.Is(err, boom) {
		t.Fatalf("SaveQuery with a failure midway: got %v, want the injected failure", err)
	}
	if _, err := s.GetConversation(ctx, "alice", "new"); !errors.Is(err, ErrNotFound) {
		t.Errorf("conversation after a failed first query: got %v, want ErrNotFound", err)
	}
	if _, err := s.Events(ctx, "alice", "new"); !errors.Is(err, ErrNotFound) {
		t.Errorf("events after a failed first query: got %v, want ErrNotFound", err)
	}

	// An existing conversation keeps its last committed state.
	s.beforeEvent = nil
	c = &Conversation{UserID: "alice", ID: "old", Title: "one", History: json.RawMessage(`["q1"]`)}
	if err := s.SaveQuery(ctx, c, "q1", envelopes("q1", 2)); err != nil {
		t.Fatal(err)
	}
	s.beforeEvent = func(i int) error {
		if i == 2 {
			return boom
		}
		return nil
	}
	c.Title, c.History = "two", json.RawMessage(`["q1", "q2"]`)
	if err := s.SaveQuery(ctx, c, "q2", envelopes("q2", 3)); !errors.Is(err, boom) {
		t.Fatalf("SaveQuery with a failure midway: got %v, want the injected failure", err)
	}
	got := mustGet(t, s, "alice", "old")
	if got.Title != "one" || string(got.History) != `["q1"]` {
		t.Errorf("after a failed query: title %q, history %s; want the previous query's", got.Title, got.History)
	}
	if events := mustEvents(t, s, "alice", "old"); len(events) != 2 {
		t.Errorf("after a failed query: %d events, want the previous query's 2", len(events))
	}
}

func testEventsInOrder(t *testing.T, newDSN newDSN) {
	t.Helper()
	s := openStore(t, newDSN(t))
	c := &Conversation{UserID: "alice", ID: "c1"}
	var want []string
	for q := range 3 {
		qid := fmt.Sprintf("q%d", q)
		envs := envelopes(qid, 5)
		if err := s.SaveQuery(t.Context(), c, qid, envs); err != nil {
			t.Fatal(err)
		}
		for _, e := range envs {
			want = append(want, qid+" "+string(e))
		}
	}
	events := mustEvents(t, s, "alice", "c1")
	var got []string
	for i, e := range events {
		got = append(got, e.QueryID+" "+string(e.Envelope))
		if i > 0 && e.Seq <= events[i-1].Seq {
			t.Errorf("event %d has seq %d after %d", i, e.Seq, events[i-1].Seq)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Events mismatch (-want +got):\n%s", diff)
	}
}

func testListNewestFirst(t *testing.T, newDSN newDSN) {
	t.Helper()
	s := openStore(t, newDSN(t))
	s.clock = fakeClock()
	ctx := t.Context()
	if list, err := s.ListConversations(ctx, "alice"); err != nil || list == nil || len(list) != 0 {
		t.Fatalf("ListConversations of a new user = %#v, %v; want empty and non-nil", list, err)
	}
	save := func(id, title string) *Conversation {
		c := &Conversation{UserID: "alice", ID: id, Title: title}
		if err := s.SaveConversation(ctx, c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	save("c1", "first")
	c2 := save("c2", "second")
	save("c3", "third")
	c1 := &Conversation{UserID: "alice", ID: "c1", Title: "first, again"}
	if err := s.SaveQuery(ctx, c1, "q1", envelopes("q1", 1)); err != nil {
		t.Fatal(err)
	}
	got, err := s.ListConversations(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	c3 := mustGet(t, s, "alice", "c3")
	want := []ConversationSummary{
		{ID: "c1", Title: "first, again", UpdatedAt: c1.UpdatedAt},
		{ID: "c3", Title: "third", UpdatedAt: c3.UpdatedAt},
		{ID: "c2", Title: "second", UpdatedAt: c2.UpdatedAt},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ListConversations mismatch (-want +got):\n%s", diff)
	}
}

func testDelete(t *testing.T, newDSN newDSN) {
	t.Helper()
	s := openStore(t, newDSN(t))
	ctx := t.Context()
	for _, id := range []string{"c1", "c2"} {
		if err := s.SaveQuery(ctx, &Conversation{UserID: "alice", ID: id}, "q1", envelopes("q1", 3)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteConversation(ctx, "alice", "c1"); err != nil {
		t.Fatalf("DeleteConversation: %v", err)
	}
	if _, err := s.GetConversation(ctx, "alice", "c1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetConversation after delete: got %v, want ErrNotFound", err)
	}
	if _, err := s.Events(ctx, "alice", "c1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Events after delete: got %v, want ErrNotFound", err)
	}
	var n int
	if err := s.db.QueryRowContext(ctx, s.q("SELECT COUNT(*) FROM events WHERE conversation_id = ?"), "c1").Scan(&n); err != nil || n != 0 {
		t.Errorf("%d events of the deleted conversation remain (%v)", n, err)
	}
	if err := s.DeleteConversation(ctx, "alice", "c1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second DeleteConversation: got %v, want ErrNotFound", err)
	}
	if events := mustEvents(t, s, "alice", "c2"); len(events) != 3 {
		t.Errorf("the other conversation has %d events, want 3", len(events))
	}
	list, err := s.ListConversations(ctx, "alice")
	if err != nil || len(list) != 1 || list[0].ID != "c2" {
		t.Errorf("ListConversations after delete = %v, %v; want only c2", list, err)
	}
}

func testUserIsolation(t *testing.T, newDSN newDSN) {
	t.Helper()
	s := openStore(t, newDSN(t))
	ctx := t.Context()
	for _, u := range []string{"alice", "bob"} {
		c := &Conversation{UserID: u, ID: "c1", Title: u + "'s", History: json.RawMessage(`["` + u + `"]`)}
		if err := s.SaveQuery(ctx, c, "q-"+u, envelopes("q-"+u, 2)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SaveConversation(ctx, &Conversation{UserID: "alice", ID: "only-alice"}); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, "bob", "c1"); got.Title != "bob's" || string(got.History) != `["bob"]` {
		t.Errorf("bob reads %q %s, want his own conversation", got.Title, got.History)
	}
	for _, e := range mustEvents(t, s, "bob", "c1") {
		if e.QueryID != "q-bob" {
			t.Errorf("bob's event log holds %s's event", e.QueryID)
		}
	}
	if _, err := s.GetConversation(ctx, "bob", "only-alice"); !errors.Is(err, ErrNotFound) {
		t.Errorf("bob reading alice's conversation id: got %v, want ErrNotFound", err)
	}
	if err := s.DeleteConversation(ctx, "bob", "only-alice"); !errors.Is(err, ErrNotFound) {
		t.Errorf("bob deleting alice's conversation id: got %v, want ErrNotFound", err)
	}
	if err := s.DeleteConversation(ctx, "alice", "c1"); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, "bob", "c1"); got.Title != "bob's" {
		t.Errorf("deleting alice's c1 changed bob's to %q", got.Title)
	}
	if events := mustEvents(t, s, "bob", "c1"); len(events) != 2 {
		t.Errorf("deleting alice's c1 left bob %d events, want 2", len(events))
	}
	list, err := s.ListConversations(ctx, "bob")
	if err != nil || len(list) != 1 || list[0].ID != "c1" {
		t.Errorf("bob's list = %v, %v; want only c1", list, err)
	}
}

func testInvalidInput(t *testing.T, newDSN newDSN) {
	t.Helper()
	s := openStore(t, newDSN(t))
	ctx := t.Context()
	tests := []struct {
		name string
		err  error
	}{
		{"empty user id", s.SaveConversation(ctx, &Conversation{ID: "c1"})},
		{"empty conversation id", s.SaveQuery(ctx, &Conversation{UserID: "alice"}, "q1", nil)},
		{"nil conversation", s.SaveConversation(ctx, nil)},
		{"invalid history", s.SaveConversation(ctx, &Conversation{UserID: "alice", ID: "c1", History: json.RawMessage(`{`)})},
		{"invalid event", s.SaveQuery(ctx, &Conversation{UserID: "alice", ID: "c1"}, "q1", []json.RawMessage{json.RawMessage(`nope`)})},
		{"empty event", s.SaveQuery(ctx, &Conversation{UserID: "alice", ID: "c1"}, "q1", []json.RawMessage{nil})},
		{"invalid user config", s.SaveUser(ctx, &User{ID: "alice", Config: json.RawMessage(`[`)})},
	}
	for _, tc := range tests {
		if tc.err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if list, err := s.ListConversations(ctx, "alice"); err != nil || len(list) != 0 {
		t.Errorf("invalid saves stored %v (%v)", list, err)
	}
}

func testConcurrentSaveQuery(t *testing.T, newDSN newDSN) {
	t.Helper()
	s := openStore(t, newDSN(t))
	const convs, queries, perQuery = 6, 8, 3
	var wg sync.WaitGroup
	errs := make(chan error, convs*queries)
	for c := range convs {
		wg.Go(func() {
			conv := &Conversation{UserID: "alice", ID: fmt.Sprintf("c%d", c)}
			for q := range queries {
				conv.History = json.RawMessage(fmt.Sprintf(`[%d]`, q))
				if err := s.SaveQuery(t.Context(), conv, fmt.Sprintf("q%d", q), envelopes(fmt.Sprintf("q%d", q), perQuery)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("SaveQuery: %v", err)
	}
	for c := range convs {
		id := fmt.Sprintf("c%d", c)
		if got := mustGet(t, s, "alice", id); string(got.History) != fmt.Sprintf(`[%d]`, queries-1) {
			t.Errorf("%s: history %s, want the last query's", id, got.History)
		}
		events := mustEvents(t, s, "alice", id)
		if len(events) != queries*perQuery {
			t.Fatalf("%s: %d events, want %d", id, len(events), queries*perQuery)
		}
		for i, e := range events {
			if want := fmt.Sprintf("q%d", i/perQuery); e.QueryID != want {
				t.Errorf("%s: event %d belongs to %s, want %s", id, i, e.QueryID, want)
			}
		}
	}
}

func testReplicasShareData(t *testing.T, newDSN newDSN) {
	t.Helper()
	dsn := newDSN(t)
	a, b := openStore(t, dsn), openStore(t, dsn)
	ctx := t.Context()
	c := &Conversation{UserID: "alice", ID: "c1", Title: "from a", History: json.RawMessage(`["hi"]`)}
	if err := a.SaveQuery(ctx, c, "q1", envelopes("q1", 2)); err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, b, "alice", "c1")
	if got.Title != "from a" || string(got.History) != `["hi"]` {
		t.Errorf("replica b reads %q %s, want what a saved", got.Title, got.History)
	}
	if events := mustEvents(t, b, "alice", "c1"); len(events) != 2 {
		t.Errorf("replica b reads %d events, want 2", len(events))
	}
	if err := b.DeleteConversation(ctx, "alice", "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.GetConversation(ctx, "alice", "c1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("replica a after b deleted: got %v, want ErrNotFound", err)
	}
}
