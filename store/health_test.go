package store

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// TestPingFullSQLite fills a SQLite database (max_page_count stops it
// growing, which SQLite reports as SQLITE_FULL, as for a full disk): a
// save fails with ErrUnavailable, Ping says not ready until a save of that
// size would fit again, then both work.
func TestPingFullSQLite(t *testing.T) {
	s := openStore(t, sqliteTestDSN(t))
	ctx := t.Context()
	c := &Conversation{UserID: "alice", ID: "c1"}
	if err := s.SaveQuery(ctx, c, &Turn{}, "q1", []NewEvent{{Envelope: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping with room: %v", err)
	}
	var pages int64
	if err := s.db.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `PRAGMA max_page_count = `+strconv.FormatInt(pages, 10)); err != nil {
		t.Fatal(err)
	}
	big := json.RawMessage(`{"text":"` + strings.Repeat("x", 1<<20) + `"}`)
	err := s.SaveQuery(ctx, c, &Turn{}, "q2", []NewEvent{{Envelope: big}})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("SaveQuery on a full database: got %v, want ErrUnavailable", err)
	}
	if err := s.Ping(ctx); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Ping on a full database: got %v, want ErrUnavailable", err)
	}
	if _, err := s.db.ExecContext(ctx, `PRAGMA max_page_count = 1073741823`); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping once there is room again: %v", err)
	}
	if err := s.SaveQuery(ctx, c, &Turn{}, "q2", []NewEvent{{Envelope: big}}); err != nil {
		t.Errorf("SaveQuery once there is room again: %v", err)
	}
}
