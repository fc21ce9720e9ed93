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
func envelopes(q string, n int) []NewEvent {
	out := make([]NewEvent, n)
	for i := range out {
		out[i].Envelope = json.RawMessage(fmt.Sprintf(`{"type": "status", "query_id": %q, "payload": {"n": %d}}`, q, i))
	}
	return out
}

// turn returns a turn that adds the messages msgs (a JSON array).
func turn(msgs string) *Turn { return &Turn{Messages: json.RawMessage(msgs)} }

func mustTurns(t *testing.T, s *Store, user, conv string) []Turn {
	t.Helper()
	turns, err := s.Turns(t.Context(), user, conv)
	if err != nil {
		t.Fatalf("Turns(%s, %s): %v", user, conv, err)
	}
	return turns
}

// history returns the messages of a conversation's turns, each turn's
// array as it was saved, joined by spaces.
func history(t *testing.T, s *Store, user, conv string) string {
	t.Helper()
	var parts []string
	for _, tn := range mustTurns(t, s, user, conv) {
		parts = append(parts, string(tn.Messages))
	}
	return strings.Join(parts, " ")
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
		UserID:    "alice",
		ID:        "c1",
		Title:     "Buy milk ✓",
		InitMode:  "multi_branch",
		TreeOps:   json.RawMessage(`[{"op": "add",  "z": 1, "a": 2}]`),
		CreatedAt: created,
	}
	if err := s.SaveConversation(ctx, want); err != nil {
		t.Fatalf("SaveConversation: %v", err)
	}
	if want.Version != 1 || want.Turns != 0 {
		t.Errorf("after the first save: version %d, %d turns; want 1 and 0", want.Version, want.Turns)
	}
	if !want.CreatedAt.Equal(created) || want.UpdatedAt.IsZero() {
		t.Errorf("after save: CreatedAt %v, UpdatedAt %v; want %v and now", want.CreatedAt, want.UpdatedAt, created)
	}
	got := mustGet(t, s, "alice", "c1")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GetConversation mismatch (-want +got):\n%s", diff)
	}

	// A turn comes back byte for byte.
	tn := &Turn{QueryID: "q1", Messages: json.RawMessage(`[{"role":"user","content":"hi \u0000 \"there\""}]`),
		Results: json.RawMessage(`{"mcp_todo": {"list": [1, 2.50, "x"]}}`), Digests: json.RawMessage(`{"mcp_todo": {"list": [1]}}`)}
	if err := s.SaveQuery(ctx, want, tn, "q1", nil); err != nil {
		t.Fatalf("SaveQuery: %v", err)
	}
	if tn.Seq != 1 || want.Version != 2 || want.Turns != 1 {
		t.Errorf("after a query: turn %d, version %d, %d turns; want 1, 2, 1", tn.Seq, want.Version, want.Turns)
	}
	if diff := cmp.Diff([]Turn{*tn}, mustTurns(t, s, "alice", "c1")); diff != "" {
		t.Errorf("Turns mismatch (-want +got):\n%s", diff)
	}
	if v, err := s.Version(ctx, "alice", "c1"); err != nil || v != 2 {
		t.Errorf("Version = %d, %v; want 2", v, err)
	}

	// Absent blobs stay absent.
	bare := &Conversation{UserID: "alice", ID: "c2"}
	if err := s.SaveQuery(ctx, bare, nil, "q1", nil); err != nil {
		t.Fatalf("SaveQuery: %v", err)
	}
	got = mustGet(t, s, "alice", "c2")
	if got.TreeOps != nil || got.Title != "" {
		t.Errorf("bare conversation came back as %+v", got)
	}
	if turns := mustTurns(t, s, "alice", "c2"); turns == nil || len(turns) != 0 {
		t.Errorf("Turns of a conversation without turns = %#v, want empty and non-nil", turns)
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
	if _, err := s.Turns(ctx, "alice", "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Turns of a missing conversation: got %v, want ErrNotFound", err)
	}
	if _, err := s.Version(ctx, "alice", "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Version of a missing conversation: got %v, want ErrNotFound", err)
	}
}

func testLargeBlobs(t *testing.T, newDSN newDSN) {
	t.Helper()
	s := openStore(t, newDSN(t))
	big := func(c byte) json.RawMessage {
		return json.RawMessage(`"` + strings.Repeat(string(c), 1<<20) + `"`)
	}
	c := &Conversation{UserID: "alice", ID: "c1"}
	tn := &Turn{Messages: json.RawMessage(`[` + string(big('h')) + `]`), Results: big('e'), Digests: big('d')}
	if err := s.SaveQuery(t.Context(), c, tn, "q1", []NewEvent{{Envelope: big('1')}, {Envelope: big('2')}}); err != nil {
		t.Fatalf("SaveQuery: %v", err)
	}
	got := mustTurns(t, s, "alice", "c1")
	if len(got) != 1 || string(got[0].Messages) != string(tn.Messages) || string(got[0].Results) != string(tn.Results) {
		t.Error("1 MiB messages or results did not round-trip")
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
	if s.dialect == dialectSQLite && s.preparedStmt(selectUser) == nil {
		t.Error("GetUser's query is parsed anew every time, not prepared once")
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
	fresh.Title = "T"
	if err := s.SaveQuery(ctx, &fresh, turn(`["q1"]`), "q1", envelopes("q1", 1)); err != nil {
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
	if h := history(t, s, "alice", "c1"); h != `["q1"]` || string(got.TreeOps) != `[{"op": "add"}]` || got.Turns != 1 {
		t.Errorf("got history %s (%d turns), tree ops %s; want the query's turn and the tree op", h, got.Turns, got.TreeOps)
	}
}

func testSaveQueryAtomic(t *testing.T, newDSN newDSN) {
	t.Helper()
	s := openStore(t, newDSN(t))
	ctx := t.Context()
	boom := errors.New("injected failure")
	s.beforeEvent = func(_ string, i int) error {
		if i == 2 {
			return boom
		}
		return nil
	}

	// A new conversation: nothing of it may remain.
	c := &Conversation{UserID: "alice", ID: "new"}
	if err := s.SaveQuery(ctx, c, turn(`["q1"]`), "q1", envelopes("q1", 4)); !errors.Is(err, boom) {
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
	c = &Conversation{UserID: "alice", ID: "old", Title: "one"}
	if err := s.SaveQuery(ctx, c, turn(`["q1"]`), "q1", envelopes("q1", 2)); err != nil {
		t.Fatal(err)
	}
	s.beforeEvent = func(_ string, i int) error {
		if i == 2 {
			return boom
		}
		return nil
	}
	c.Title = "two"
	if err := s.SaveQuery(ctx, c, turn(`["q2"]`), "q2", envelopes("q2", 3)); !errors.Is(err, boom) {
		t.Fatalf("SaveQuery with a failure midway: got %v, want the injected failure", err)
	}
	got := mustGet(t, s, "alice", "old")
	if h := history(t, s, "alice", "old"); got.Title != "one" || h != `["q1"]` || got.Version != 1 || got.Turns != 1 {
		t.Errorf("after a failed query: title %q, history %s, version %d, %d turns; want the previous query's", got.Title, h, got.Version, got.Turns)
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
		if err := s.SaveQuery(t.Context(), c, nil, qid, envs); err != nil {
			t.Fatal(err)
		}
		for _, e := range envs {
			want = append(want, qid+" "+string(e.Envelope))
		}
	}
	events := mustEvents(t, s, "alice", "c1")
	var got []string
	for i, e := range events {
		got = append(got, e.QueryID+" "+string(e.Envelope))
		if i > 0 && (e.Seq < events[i-1].Seq || (e.Seq == events[i-1].Seq) != (e.QueryID == events[i-1].QueryID)) {
			t.Errorf("event %d of query %s has seq %d after %d of query %s: want one seq per save, increasing",
				i, e.QueryID, e.Seq, events[i-1].Seq, events[i-1].QueryID)
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
	if err := s.SaveQuery(ctx, c1, turn(`[]`), "q1", envelopes("q1", 1)); err != nil {
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
		if err := s.SaveQuery(ctx, &Conversation{UserID: "alice", ID: id}, turn(`["q1"]`), "q1", envelopes("q1", 3)); err != nil {
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
	for _, table := range []string{"events", "turns"} {
		if err := s.db.QueryRowContext(ctx, s.q("SELECT COUNT(*) FROM "+table+" WHERE conversation_id = ?"), "c1").Scan(&n); err != nil || n != 0 {
			t.Errorf("%d %s of the deleted conversation remain (%v)", n, table, err)
		}
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
		c := &Conversation{UserID: u, ID: "c1", Title: u + "'s"}
		if err := s.SaveQuery(ctx, c, turn(`["`+u+`"]`), "q-"+u, envelopes("q-"+u, 2)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SaveConversation(ctx, &Conversation{UserID: "alice", ID: "only-alice"}); err != nil {
		t.Fatal(err)
	}
	if got, h := mustGet(t, s, "bob", "c1"), history(t, s, "bob", "c1"); got.Title != "bob's" || h != `["bob"]` {
		t.Errorf("bob reads %q %s, want his own conversation", got.Title, h)
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
		{"empty conversation id", s.SaveQuery(ctx, &Conversation{UserID: "alice"}, nil, "q1", nil)},
		{"nil conversation", s.SaveConversation(ctx, nil)},
		{"invalid tree ops", s.SaveConversation(ctx, &Conversation{UserID: "alice", ID: "c1", TreeOps: json.RawMessage(`{`)})},
		{"invalid messages", s.SaveQuery(ctx, &Conversation{UserID: "alice", ID: "c1"}, turn(`{`), "q1", nil)},
		{"invalid results", s.SaveQuery(ctx, &Conversation{UserID: "alice", ID: "c1"}, &Turn{Results: json.RawMessage(`[`)}, "q1", nil)},
		{"invalid event", s.SaveQuery(ctx, &Conversation{UserID: "alice", ID: "c1"}, nil, "q1", []NewEvent{{Envelope: json.RawMessage(`nope`)}})},
		{"invalid event digest", s.SaveQuery(ctx, &Conversation{UserID: "alice", ID: "c1"}, nil, "q1", []NewEvent{{Envelope: json.RawMessage(`{}`), Digest: json.RawMessage(`nope`)}})},
		{"empty event", s.SaveQuery(ctx, &Conversation{UserID: "alice", ID: "c1"}, nil, "q1", []NewEvent{{}})},
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
				if err := s.SaveQuery(t.Context(), conv, turn(fmt.Sprintf(`[%d]`, q)), fmt.Sprintf("q%d", q), envelopes(fmt.Sprintf("q%d", q), perQuery)); err != nil {
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
		var want []string
		for q := range queries {
			want = append(want, fmt.Sprintf(`[%d]`, q))
		}
		if h := history(t, s, "alice", id); h != strings.Join(want, " ") {
			t.Errorf("%s: history %s, want every query's turn in order", id, h)
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
	c := &Conversation{UserID: "alice", ID: "c1", Title: "from a"}
	if err := a.SaveQuery(ctx, c, turn(`["hi"]`), "q1", envelopes("q1", 2)); err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, b, "alice", "c1")
	if h := history(t, b, "alice", "c1"); got.Title != "from a" || h != `["hi"]` {
		t.Errorf("replica b reads %q %s, want what a saved", got.Title, h)
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
