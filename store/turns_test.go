package store

import (
	"database/sql"
	"encoding/json"
	"log/slog"
	"slices"
	"testing"
)

// testTrim saves three queries, each with a large result: only the newest
// query's results and events stay whole, the others keep their digests.
func testTrim(t *testing.T, newDSN newDSN) {
	t.Helper()
	s := openStore(t, newDSN(t))
	ctx := t.Context()
	c := &Conversation{UserID: "alice", ID: "c1"}
	for _, q := range []string{"q1", "q2", "q3"} {
		tn := &Turn{QueryID: q, Messages: json.RawMessage(`["` + q + `"]`),
			Results: json.RawMessage(`{"big": "` + q + ` whole"}`), Digests: json.RawMessage(`{"big": "` + q + ` digest"}`)}
		events := []NewEvent{
			{Envelope: json.RawMessage(`{"result": "` + q + ` whole"}`), Digest: json.RawMessage(`{"result": "` + q + ` digest"}`)},
			{Envelope: json.RawMessage(`{"text": "` + q + ` answer"}`)},
		}
		if err := s.SaveQuery(ctx, c, tn, q, events); err != nil {
			t.Fatal(err)
		}
	}
	// A query without results or events trims nothing.
	if err := s.SaveQuery(ctx, c, turn(`["q4"]`), "q4", nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tn := range mustTurns(t, s, "alice", "c1") {
		got = append(got, string(tn.Messages)+" "+string(tn.Results)+" "+string(tn.Digests))
	}
	want := []string{
		`["q1"]  {"big": "q1 digest"}`,
		`["q2"]  {"big": "q2 digest"}`,
		`["q3"] {"big": "q3 whole"} {"big": "q3 digest"}`,
		`["q4"]  `,
	}
	if !slices.Equal(got, want) {
		t.Errorf("turns after 4 queries:\n got %q\nwant %q", got, want)
	}
	got = got[:0]
	for _, e := range mustEvents(t, s, "alice", "c1") {
		got = append(got, string(e.Envelope))
	}
	want = []string{
		`{"result": "q1 digest"}`, `{"text": "q1 answer"}`,
		`{"result": "q2 digest"}`, `{"text": "q2 answer"}`,
		`{"result": "q3 whole"}`, `{"text": "q3 answer"}`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("events after 4 queries:\n got %q\nwant %q", got, want)
	}
}

// testMigrateBlobs opens a database at the second schema version, with
// conversations saved as growing blobs, and checks that the third moves
// each one's history and environment into its first turn.
func testMigrateBlobs(t *testing.T, newDSN newDSN) {
	t.Helper()
	dsn := newDSN(t)
	old := openAt(t, dsn, 2)
	ctx := t.Context()
	history := `[{"role":"user","content":"add milk"},{"role":"assistant","content":"Added."}]`
	env := `{"mcp_todo":{"list":[{"objects":[{"_REF_ID":"mcp_todo_list_0_0"}],"metadata":{}}]}}`
	writeOld(t, old, []oldRow{
		{`INSERT INTO users (id, created_at) VALUES (?, 1)`, []any{"alice"}},
		{`INSERT INTO conversations (user_id, id, title, init_mode, tree_ops, history, environment, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, 1, 2)`, []any{"alice", "c1", "Milk", "one_branch", `[]`, history, env}},
		{`INSERT INTO conversations (user_id, id, title, init_mode, tree_ops, history, environment, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, 1, 2)`, []any{"alice", "empty", "", "one_branch", `[]`, `[]`, `{}`}},
	})

	s := openStore(t, dsn)
	c := mustGet(t, s, "alice", "c1")
	if c.Title != "Milk" || c.Turns != 1 || c.Version != 0 {
		t.Errorf("migrated row: title %q, %d turns, version %d; want Milk, 1, 0", c.Title, c.Turns, c.Version)
	}
	turns := mustTurns(t, s, "alice", "c1")
	if len(turns) != 1 || string(turns[0].Messages) != history || string(turns[0].Results) != env || turns[0].Digests != nil || turns[0].Seq != 1 {
		t.Errorf("migrated turns = %+v, want one with the old history and environment, without digests", turns)
	}
	if turns := mustTurns(t, s, "alice", "empty"); len(turns) != 0 {
		t.Errorf("an empty conversation got turns %+v", turns)
	}
	var blobs int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM conversations WHERE history IS NOT NULL OR environment IS NOT NULL`).Scan(&blobs); err != nil || blobs != 0 {
		t.Errorf("%d rows keep their old blobs (%v)", blobs, err)
	}

	// The turn gets digests; the next turn with results trims it.
	if err := s.SetDigests(ctx, "alice", "c1", 1, json.RawMessage(`{"d": 1}`)); err != nil {
		t.Fatal(err)
	}
	next := &Turn{QueryID: "q2", Messages: json.RawMessage(`[]`), Results: json.RawMessage(`{"r": 2}`), Digests: json.RawMessage(`{"d": 2}`)}
	if err := s.SaveQuery(ctx, c, next, "q2", nil); err != nil {
		t.Fatal(err)
	}
	turns = mustTurns(t, s, "alice", "c1")
	if len(turns) != 2 || turns[0].Results != nil || string(turns[0].Digests) != `{"d": 1}` || next.Seq != 2 {
		t.Errorf("after the next query: turns %+v (new one %d), want the first trimmed to its digests", turns, next.Seq)
	}
}

// testMigrateEvents opens a database whose events were saved a row each
// (the sixteenth schema version), then saves queries on the seventeenth,
// which packs a query's events in one row, beside a replica from before
// (a rolling upgrade) that reads and writes events as it did: it reads a
// packed row as the query's last event and trims only that; the log
// replays every event in order, and a newer save trims the older ones.
func testMigrateEvents(t *testing.T, newDSN newDSN) {
	t.Helper()
	dsn := newDSN(t)
	old := openAt(t, dsn, 16)
	ctx := t.Context()
	writeOld(t, old, []oldRow{
		{`INSERT INTO users (id, created_at) VALUES (?, 1)`, []any{"alice"}},
		{`INSERT INTO conversations (user_id, id, title, init_mode, created_at, updated_at, version, turns)
			VALUES (?, ?, '', 'one_branch', 1, 2, 1, 0)`, []any{"alice", "c1"}},
		{`INSERT INTO events (user_id, conversation_id, query_id, envelope, digest) VALUES (?, ?, ?, ?, ?)`,
			[]any{"alice", "c1", "q1", `{"result": "q1 whole"}`, `{"result": "q1 digest"}`}},
		{`INSERT INTO events (user_id, conversation_id, query_id, envelope) VALUES (?, ?, ?, ?)`,
			[]any{"alice", "c1", "q1", `{"text": "q1 answer"}`}},
	})

	s := openStore(t, dsn)
	c := mustGet(t, s, "alice", "c1")
	save := func(qid string) {
		t.Helper()
		events := []NewEvent{
			{Envelope: json.RawMessage(`{"result": "` + qid + ` [whole], \"quoted\""}`), Digest: json.RawMessage(`{"result": "` + qid + ` digest"}`)},
			{Envelope: json.RawMessage(`["an", "array"]`)},
			{Envelope: json.RawMessage(`{"text": "` + qid + ` answer"}`), Digest: json.RawMessage(`{"text": "` + qid + ` short"}`)},
		}
		if err := s.SaveQuery(ctx, c, nil, qid, events); err != nil {
			t.Fatal(err)
		}
	}
	read := func(query string) []string {
		t.Helper()
		rows, err := s.db.QueryContext(ctx, s.q(query), "alice", "c1")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = rows.Close() }()
		var got []string
		for rows.Next() {
			var qid, env string
			if err := rows.Scan(&qid, &env); err != nil {
				t.Fatal(err)
			}
			got = append(got, qid+" "+env)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	// What this Store replays, and what a replica from before reads.
	replayed := func() []string {
		t.Helper()
		var got []string
		for _, e := range mustEvents(t, s, "alice", "c1") {
			got = append(got, e.QueryID+" "+string(e.Envelope))
		}
		return got
	}
	const oldRead = `SELECT query_id, envelope FROM events WHERE user_id = ? AND conversation_id = ? ORDER BY seq`
	check := func(when string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s:\n got %q\nwant %q", when, got, want)
		}
	}

	save("q2")
	q2Whole := []string{`q2 {"result": "q2 [whole], \"quoted\""}`, `q2 ["an", "array"]`, `q2 {"text": "q2 answer"}`}
	check("replayed after q2", replayed(), append([]string{`q1 {"result": "q1 digest"}`, `q1 {"text": "q1 answer"}`}, q2Whole...))
	check("read by a replica from before, after q2", read(oldRead),
		[]string{`q1 {"result": "q1 digest"}`, `q1 {"text": "q1 answer"}`, `q2 {"text": "q2 answer"}`})
	var rows int
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM events WHERE query_id = ?`), "q2").Scan(&rows); err != nil || rows != 1 {
		t.Errorf("q2's events take %d rows (%v), want 1", rows, err)
	}

	// A replica from before saves q3 as it did: it trims the packed row's
	// last event, and only that.
	for _, stmt := range []oldRow{
		{`UPDATE events SET envelope = digest, digest = NULL
			WHERE user_id = ? AND conversation_id = ? AND digest IS NOT NULL AND query_id <> ?`, []any{"alice", "c1", "q3"}},
		{`INSERT INTO events (user_id, conversation_id, query_id, envelope) VALUES (?, ?, ?, ?)`, []any{"alice", "c1", "q3", `{"text": "q3 answer"}`}},
	} {
		if _, err := s.db.ExecContext(ctx, s.q(stmt.q), stmt.args...); err != nil {
			t.Fatal(err)
		}
	}
	check("read by a replica from before, after its q3", read(oldRead),
		[]string{`q1 {"result": "q1 digest"}`, `q1 {"text": "q1 answer"}`, `q2 {"text": "q2 short"}`, `q3 {"text": "q3 answer"}`})
	check("replayed after q3", replayed(), append(append([]string{`q1 {"result": "q1 digest"}`, `q1 {"text": "q1 answer"}`}, q2Whole...), `q3 {"text": "q3 answer"}`))

	// This Store's next save trims q2's events to their digests.
	save("q4")
	check("replayed after q4", replayed(), []string{
		`q1 {"result": "q1 digest"}`, `q1 {"text": "q1 answer"}`,
		`q2 {"result": "q2 digest"}`, `q2 ["an", "array"]`, `q2 {"text": "q2 short"}`,
		`q3 {"text": "q3 answer"}`,
		`q4 {"result": "q4 [whole], \"quoted\""}`, `q4 ["an", "array"]`, `q4 {"text": "q4 answer"}`,
	})

	// A packed row that is not an array (written by hand) replays as its
	// last event; the rest of the log still replays.
	if _, err := s.db.ExecContext(ctx, s.q(`INSERT INTO events (user_id, conversation_id, query_id, envelope, envelopes) VALUES (?, ?, ?, ?, ?)`),
		"alice", "c1", "q5", `{"text": "q5 answer"}`, `[{"text": "q5 cut`); err != nil {
		t.Fatal(err)
	}
	if got := replayed(); len(got) != 10 || got[9] != `q5 {"text": "q5 answer"}` || got[0] != `q1 {"result": "q1 digest"}` {
		t.Errorf("replayed with a broken row: %q, want the nine events before and q5's last", got)
	}
}

// oldRow is a statement that writes a row of an older schema.
type oldRow struct {
	q    string
	args []any
}

// writeOld writes rows with old, at an older schema, then closes it.
func writeOld(t *testing.T, old *Store, rows []oldRow) {
	t.Helper()
	for _, r := range rows {
		if _, err := old.db.ExecContext(t.Context(), old.q(r.q), r.args...); err != nil {
			t.Fatal(err)
		}
	}
	if err := old.db.Close(); err != nil {
		t.Fatal(err)
	}
}

// openAt opens the database dsn with its schema brought to version only;
// the caller closes s.db.
func openAt(t *testing.T, dsn string, version int) *Store {
	t.Helper()
	d, driverDSN, where, err := parseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	driver := "sqlite"
	if d == dialectPostgres {
		driver = "pgx"
	}
	db, err := sql.Open(driver, driverDSN)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	s := &Store{dialect: d, db: db, logger: slog.New(slog.DiscardHandler), where: where}
	if err := s.migrateTo(t.Context(), version); err != nil {
		_ = db.Close()
		t.Fatal(err)
	}
	return s
}
