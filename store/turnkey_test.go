package store

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
)

// saveQ1 saves query q1 of alice's conversation c1 on s, as persist does:
// a new Conversation and Turn each time, the turn keyed by its save (k1).
func saveQ1(ctx context.Context, s *Store) (*Conversation, *Turn, error) {
	c := &Conversation{UserID: "alice", ID: "c1", Title: "Milk"}
	tn := &Turn{QueryID: "q1", Key: "k1", Messages: json.RawMessage(`["add milk","Added."]`)}
	err := s.SaveQuery(ctx, c, tn, "q1", []NewEvent{{Envelope: json.RawMessage(`{"text":"Added."}`)}})
	return c, tn, err
}

// assertSavedOnce checks that alice's c1 holds q1's turn and event once.
func assertSavedOnce(t *testing.T, s *Store) {
	t.Helper()
	turns := mustTurns(t, s, "alice", "c1")
	var keys []string
	for _, tn := range turns {
		keys = append(keys, tn.QueryID)
	}
	if len(keys) != 1 || keys[0] != "q1" {
		t.Errorf("turns of the conversation: %q, want q1's once", keys)
	}
	if evs := mustEvents(t, s, "alice", "c1"); len(evs) != 1 {
		t.Errorf("%d events saved, want q1's one", len(evs))
	}
	if c := mustGet(t, s, "alice", "c1"); c.Turns != 1 {
		t.Errorf("the conversation counts %d turns, want 1", c.Turns)
	}
}

// testRetriedSave saves a query twice, as a caller does that retries a
// save whose commit went through though it was told it failed: the second
// save writes nothing and succeeds, reporting the turn and conversation as
// saved.
func testRetriedSave(t *testing.T, newDSN newDSN) {
	t.Helper()
	s := openStore(t, newDSN(t))
	ctx := t.Context()
	first, t1, err := saveQ1(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	again, t2, err := saveQ1(ctx, s)
	if err != nil {
		t.Fatalf("the save retried: %v", err)
	}
	if t2.Seq != t1.Seq || again.Version != first.Version || again.Turns != 1 || !again.CreatedAt.Equal(first.CreatedAt) {
		t.Errorf("the save retried reports turn %d, version %d, %d turns, created %v; want %d, %d, 1, %v",
			t2.Seq, again.Version, again.Turns, again.CreatedAt, t1.Seq, first.Version, first.CreatedAt)
	}
	assertSavedOnce(t, s)

	// The next query appends; q1 retried then still writes nothing.
	c := &Conversation{UserID: "alice", ID: "c1", Title: "Milk"}
	if err := s.SaveQuery(ctx, c, &Turn{QueryID: "q2", Key: "k2", Messages: json.RawMessage(`["and eggs"]`)}, "q2", nil); err != nil {
		t.Fatal(err)
	}
	late, t3, err := saveQ1(ctx, s)
	if err != nil {
		t.Fatalf("q1 retried after q2: %v", err)
	}
	if t3.Seq != 1 || late.Version != c.Version || late.Turns != 2 {
		t.Errorf("q1 retried after q2 reports turn %d, version %d, %d turns; want 1, %d, 2", t3.Seq, late.Version, late.Turns, c.Version)
	}
	if n := len(mustTurns(t, s, "alice", "c1")); n != 2 {
		t.Errorf("%d turns after q1, q2 and q1 again; want 2", n)
	}
	// Turns without a key are not deduplicated.
	for range 2 {
		if err := s.SaveQuery(ctx, c, turn(`["no key"]`), "", nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(mustTurns(t, s, "alice", "c1")); n != 4 {
		t.Errorf("%d turns after two saves without a key, want 4", n)
	}
	// A client that reuses its query id: another save, another turn.
	if err := s.SaveQuery(ctx, c, &Turn{QueryID: "q1", Key: "k3", Messages: json.RawMessage(`["and bread"]`)}, "q1", nil); err != nil {
		t.Fatal(err)
	}
	if n := len(mustTurns(t, s, "alice", "c1")); n != 5 {
		t.Errorf("%d turns after a second query under q1, want 5", n)
	}
}

// testMigrateTurnKeys opens databases of the schema before turns had a
// key, holding a query id used twice (a client that reuses its ids), one
// of them with the unique index by query of the unreleased eleventh
// migration: every turn keeps its query id, a new keyed save writes once,
// and a later query under a used id is saved too.
func testMigrateTurnKeys(t *testing.T, newDSN newDSN) {
	t.Helper()
	for _, withQueryIndex := range []bool{false, true} {
		dsn := newDSN(t)
		old := openAt(t, dsn, 10) // the last schema without keys
		ctx := t.Context()
		stmts := []struct {
			q    string
			args []any
		}{
			{`INSERT INTO users (id, created_at) VALUES (?, 1)`, []any{"alice"}},
			{`INSERT INTO conversations (user_id, id, title, init_mode, created_at, updated_at, version, turns)
				VALUES (?, ?, 'Milk', 'one_branch', 1, 2, 4, 4)`, []any{"alice", "c1"}},
			{`INSERT INTO turns (user_id, conversation_id, seq, query_id, messages) VALUES
				(?, ?, 1, '', '["moved"]'), (?, ?, 2, 'q1', '["add milk"]'), (?, ?, 3, 'q0', '["add eggs"]'), (?, ?, 4, '', '["moved"]')`,
				[]any{"alice", "c1", "alice", "c1", "alice", "c1", "alice", "c1"}},
		}
		if withQueryIndex {
			stmts = append(stmts,
				struct {
					q    string
					args []any
				}{`CREATE UNIQUE INDEX turns_by_query ON turns (user_id, conversation_id, query_id) WHERE query_id <> ''`, nil},
				struct {
					q    string
					args []any
				}{`INSERT INTO schema_version (version) VALUES (11)`, nil})
		}
		for _, stmt := range stmts {
			if _, err := old.db.ExecContext(ctx, old.q(stmt.q), stmt.args...); err != nil {
				t.Fatal(err)
			}
		}
		if err := old.db.Close(); err != nil {
			t.Fatal(err)
		}

		s := openStore(t, dsn)
		var keys []string
		for _, tn := range mustTurns(t, s, "alice", "c1") {
			keys = append(keys, tn.QueryID)
		}
		if want := []string{"", "q1", "q0", ""}; !slices.Equal(keys, want) {
			t.Errorf("index by query %v: query ids after the migration: %q, want them as they were, %q", withQueryIndex, keys, want)
		}
		for range 2 { // a save and its retry
			if _, _, err := saveQ1(ctx, s); err != nil {
				t.Fatalf("index by query %v: q1 saved again: %v", withQueryIndex, err)
			}
		}
		if n := len(mustTurns(t, s, "alice", "c1")); n != 5 {
			t.Errorf("index by query %v: %d turns after a new query under q1 and its retry; want 5", withQueryIndex, n)
		}
	}
}

// TestRetryOverlapsSave retries a save while the save it retries is still
// being committed on PostgreSQL (its server paused, its caller's deadline
// passed): the retry cannot see the turn yet, and the unique key on it is
// what keeps it from being written twice. The retry runs on another Store,
// a replica, as a retried request may.
func TestRetryOverlapsSave(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	app := randomID("retry")
	a, b := openStore(t, dsn), openStore(t, withParam(t, dsn, "application_name", app))
	admin := pgAdmin(t)
	ctx := t.Context()

	paused, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	a.beforeEvent = func(queryID string, i int) error {
		once.Do(func() {
			close(paused)
			<-resume
		})
		return nil
	}
	first := make(chan error, 1)
	go func() {
		_, _, err := saveQ1(ctx, a)
		first <- err
	}()
	<-paused // a's transaction holds q1's turn, not committed

	retry := make(chan error, 1)
	go func() {
		_, _, err := saveQ1(ctx, b)
		retry <- err
	}()
	// The retry waits for a's transaction, on the conversation's row.
	testenv.WaitFor(t, 10*time.Second, "the retry waiting for the first save's locks", func() bool {
		var n int
		err := admin.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND application_name = $1`, app).Scan(&n)
		return err == nil && n > 0
	})
	close(resume)
	if err := <-first; err != nil {
		t.Fatalf("the first save: %v", err)
	}
	if err := <-retry; err != nil {
		t.Fatalf("the retry: %v", err)
	}
	assertSavedOnce(t, a)
}
