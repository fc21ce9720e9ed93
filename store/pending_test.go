package store

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// testVaultPending: a sign-in is handed out once, by its state only, not
// after it expired, from another Store on the same database (a replica),
// and its state and value are nowhere in the table in clear.
func testVaultPending(t *testing.T, newDSN newDSN) {
	t.Helper()
	ctx := t.Context()
	dsn := newDSN(t)
	key := newKey(t)
	a := openVault(t, openStore(t, dsn), key)
	b := openVault(t, openStore(t, dsn), key)
	state, value := "state-3f9a61c2d8e04b7a", []byte(`{"verifier":"pkce-verifier-81d07e5c"}`)
	if err := a.PutPending(ctx, state, "alice", value, time.Now().Add(time.Minute), testCaps); err != nil {
		t.Fatal(err)
	}
	var dump strings.Builder
	rows, err := a.s.db.QueryContext(ctx, `SELECT state_hash, sealed FROM oauth_pending`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var h, sealed string
		if err := rows.Scan(&h, &sealed); err != nil {
			t.Fatal(err)
		}
		dump.WriteString(h + " " + sealed + "\n")
	}
	_ = rows.Close()
	if strings.Contains(dump.String(), state) || strings.Contains(dump.String(), "pkce-verifier") {
		t.Errorf("oauth_pending holds the state or the value in clear:\n%s", dump.String())
	}

	if _, err := b.TakePending(ctx, "another-state"); !errors.Is(err, ErrNotFound) {
		t.Errorf("TakePending of an unknown state = %v, want ErrNotFound", err)
	}
	got, err := b.TakePending(ctx, state) // the other replica
	if err != nil || string(got) != string(value) {
		t.Fatalf("TakePending on another replica = %q, %v", got, err)
	}
	if _, err := a.TakePending(ctx, state); !errors.Is(err, ErrNotFound) {
		t.Errorf("second TakePending = %v, want ErrNotFound (one use)", err)
	}

	if err := a.PutPending(ctx, "old-state", "alice", value, time.Now().Add(-time.Second), testCaps); err != nil {
		t.Fatal(err)
	}
	if _, err := a.TakePending(ctx, "old-state"); !errors.Is(err, ErrNotFound) {
		t.Errorf("TakePending of an expired sign-in = %v, want ErrNotFound", err)
	}

	// Caps: two per user, three in all, across replicas; expired ones
	// make room.
	caps := PendingCaps{PerUser: 2, Total: 3}
	soon := time.Now().Add(time.Minute)
	for _, st := range []string{"a1", "a2"} {
		if err := a.PutPending(ctx, st, "alice", value, soon, caps); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.PutPending(ctx, "a3", "alice", value, soon, caps); !errors.Is(err, ErrTooMany) || !strings.Contains(err.Error(), `user "alice" has 2`) {
		t.Errorf("alice's third sign-in = %v, want ErrTooMany naming alice", err)
	}
	if err := b.PendingRoom(ctx, "alice", caps); !errors.Is(err, ErrTooMany) {
		t.Errorf("PendingRoom for alice at her cap = %v, want ErrTooMany", err)
	}
	if err := b.PutPending(ctx, "b1", "bob", value, soon, caps); err != nil {
		t.Fatal(err)
	}
	if err := b.PutPending(ctx, "c1", "carol", value, soon, caps); !errors.Is(err, ErrTooMany) || !strings.Contains(err.Error(), "3 sign-ins are waiting") {
		t.Errorf("a fourth sign-in in all = %v, want ErrTooMany for the total", err)
	}
	if _, err := a.TakePending(ctx, "a1"); err != nil {
		t.Fatal(err)
	}
	if err := b.PendingRoom(ctx, "alice", caps); err != nil {
		t.Errorf("PendingRoom for alice after one was taken = %v", err)
	}
}

var testCaps = PendingCaps{PerUser: 10, Total: 100}
