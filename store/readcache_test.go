package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// testReadsSeeEveryWriter: the reads a query makes (a conversation's
// version, the user's record, the config in force) answer what was last
// written, by this Store or by another on the same database, whether or not
// the Store keeps their answers (SQLite does, between writes).
func testReadsSeeEveryWriter(t *testing.T, newDSN newDSN) {
	t.Helper()
	dsn := newDSN(t)
	a, b := openStore(t, dsn), openStore(t, dsn)
	ctx := t.Context()
	const user, conv = "reader", "c1"

	version := func(s *Store) int64 {
		t.Helper()
		v, err := s.Version(ctx, user, conv)
		if err != nil {
			t.Fatalf("Version: %v", err)
		}
		return v
	}
	config := func(s *Store) string {
		t.Helper()
		c, err := s.InForceUserConfig(ctx, user, "default")
		if errors.Is(err, ErrNotFound) {
			return "none"
		}
		if err != nil {
			t.Fatalf("InForceUserConfig: %v", err)
		}
		return c.ID + " " + string(c.Body)
	}
	userConfig := func(s *Store) string {
		t.Helper()
		u, err := s.GetUser(ctx, user)
		if err != nil {
			t.Fatalf("GetUser: %v", err)
		}
		return string(u.Config)
	}
	save := func(s *Store, q string) {
		t.Helper()
		c := &Conversation{UserID: user, ID: conv, Title: q, InitMode: "default"}
		if err := s.SaveQuery(ctx, c, turn(`["`+q+`"]`), q, envelopes(q, 1)); err != nil {
			t.Fatalf("SaveQuery: %v", err)
		}
	}

	save(a, "q1")
	v1 := version(a)
	if got := version(a); got != v1 {
		t.Fatalf("Version read twice: %d then %d", v1, got)
	}
	save(b, "q2") // another writer
	if got := version(a); got <= v1 {
		t.Fatalf("after another Store's save, Version = %d, want more than %d", got, v1)
	}
	save(a, "q3") // this Store
	if got, want := version(a), version(b); got != want {
		t.Fatalf("after this Store's save, Version = %d, the other Store reads %d", got, want)
	}

	if got := config(a); got != "none" {
		t.Fatalf("config in force before any: %s", got)
	}
	if err := b.SaveUserConfig(ctx, &UserConfig{UserID: user, ID: "p1", Name: "one", Default: true, Body: json.RawMessage(`{"n":1}`)}); err != nil {
		t.Fatal(err)
	}
	if got := config(a); got != `p1 {"n":1}` {
		t.Fatalf("after another Store saved a config: %s", got)
	}
	if err := a.SaveUserConfig(ctx, &UserConfig{UserID: user, ID: "p1", Name: "one", Default: true, Body: json.RawMessage(`{"n":2}`)}); err != nil {
		t.Fatal(err)
	}
	if got := config(a); got != `p1 {"n":2}` {
		t.Fatalf("after this Store changed the config: %s", got)
	}
	if err := a.DeleteUserConfig(ctx, user, "p1"); err != nil {
		t.Fatal(err)
	}
	if got := config(a); got != "none" {
		t.Fatalf("after this Store deleted the config: %s", got)
	}

	if got := userConfig(a); got != "" {
		t.Fatalf("user config before any: %q", got)
	}
	if err := b.SaveUser(ctx, &User{ID: user, Config: json.RawMessage(`{"ops":1}`)}); err != nil {
		t.Fatal(err)
	}
	if got := userConfig(a); got != `{"ops":1}` {
		t.Fatalf("after another Store saved the user: %q", got)
	}
	if err := a.SaveUser(ctx, &User{ID: user, Config: json.RawMessage(`{"ops":2}`)}); err != nil {
		t.Fatal(err)
	}
	u, err := a.GetUser(ctx, user)
	if err != nil {
		t.Fatal(err)
	}
	if string(u.Config) != `{"ops":2}` {
		t.Fatalf("after this Store saved the user: %s", u.Config)
	}
	u.Config[0] = 'X' // a caller's copy: the next read is not changed by it
	if got := userConfig(a); got != `{"ops":2}` {
		t.Fatalf("a caller's change of a returned config reached the next read: %q", got)
	}

	if err := b.DeleteConversation(ctx, user, conv); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Version(ctx, user, conv); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Version after another Store deleted the conversation: %v, want ErrNotFound", err)
	}
	save(a, "q4")
	if err := a.DeleteConversation(ctx, user, conv); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Version(ctx, user, conv); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Version after this Store deleted the conversation: %v, want ErrNotFound", err)
	}
}

// TestCachedReadsUnderConcurrentWrites reads versions and configs while
// other goroutines of the same Store and another Store write them: once
// the writers are done, every read answers what was written last.
func TestCachedReadsUnderConcurrentWrites(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "elysia.db")
	a, b := openStore(t, dsn), openStore(t, dsn)
	ctx := t.Context()
	const convs = 4
	var wg sync.WaitGroup
	for w, s := range []*Store{a, b, a} {
		wg.Go(func() {
			for i := range 30 {
				conv := fmt.Sprintf("c%d", i%convs)
				c := &Conversation{UserID: "u", ID: conv, Title: "t", InitMode: "default"}
				q := fmt.Sprintf("w%d-%d", w, i)
				if err := s.SaveQuery(ctx, c, turn(`[]`), q, envelopes(q, 1)); err != nil {
					t.Errorf("SaveQuery: %v", err)
					return
				}
				body := json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))
				if err := s.SaveUserConfig(ctx, &UserConfig{UserID: "u", ID: "p", Name: "p", Default: true, Body: body}); err != nil {
					t.Errorf("SaveUserConfig: %v", err)
					return
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for i := range 200 {
				_, _ = a.Version(ctx, "u", fmt.Sprintf("c%d", i%convs))
				_, _ = a.InForceUserConfig(ctx, "u", "default")
			}
		})
	}
	wg.Wait()
	for i := range convs {
		conv := fmt.Sprintf("c%d", i)
		got, err := a.Version(ctx, "u", conv)
		if err != nil {
			t.Fatal(err)
		}
		want, err := b.GetConversation(ctx, "u", conv)
		if err != nil {
			t.Fatal(err)
		}
		if got != want.Version {
			t.Errorf("%s: Version = %d, stored %d", conv, got, want.Version)
		}
	}
	got, err := a.InForceUserConfig(ctx, "u", "default")
	if err != nil {
		t.Fatal(err)
	}
	want, err := b.DefaultUserConfig(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Body) != string(want.Body) {
		t.Errorf("config in force = %s, stored %s", got.Body, want.Body)
	}
}

// BenchmarkVersion is the read each query of a conversation in memory
// makes: from the database, or from what the Store kept (SQLite).
func BenchmarkVersion(b *testing.B) {
	s, err := Open(b.Context(), filepath.Join(b.TempDir(), "elysia.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	c := &Conversation{UserID: "u", ID: "c", Title: "t", InitMode: "default"}
	if err := s.SaveConversation(b.Context(), c); err != nil {
		b.Fatal(err)
	}
	for _, kept := range []bool{false, true} {
		b.Run(fmt.Sprintf("kept=%t", kept), func(b *testing.B) {
			reads := s.reads
			if !kept {
				s.reads = nil
			}
			defer func() { s.reads = reads }()
			for b.Loop() {
				if _, err := s.Version(b.Context(), "u", "c"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSavedVersionsKeepTheNewest: the saves of one group commit record
// their versions in any order, and a save that ends after the cache was
// emptied or the conversation deleted records nothing.
func TestSavedVersionsKeepTheNewest(t *testing.T) {
	r := newReadCache()
	ref := convRef{"u", "c"}
	version := func() (int64, bool) { return r.version(r.epoch, ref) }

	e := r.begun()
	r.saved(e, ref, 6)
	r.saved(e, ref, 5) // told later, committed earlier
	if v, ok := version(); !ok || v != 6 {
		t.Fatalf("after saves of 6 then 5: %d, %t; want 6", v, ok)
	}

	e = r.begun()
	r.forgetConversation(ref) // deleted while the save was told
	r.saved(e, ref, 7)
	if v, ok := version(); ok {
		t.Fatalf("a save told after a delete left version %d", v)
	}

	e = r.begun()
	r.mu.Lock()
	r.emptyLocked() // another connection wrote, and a read saw it
	r.mu.Unlock()
	r.saved(e, ref, 8)
	if v, ok := version(); ok {
		t.Fatalf("a save told after the cache was emptied left version %d", v)
	}

	// A full map empties the cache instead of keeping a read's answer.
	e = r.begun()
	for i := range maxCachedReads {
		r.saved(e, convRef{"u", fmt.Sprint(i)}, 1)
	}
	r.readVersion(e, ref, 3)
	if r.epoch == e || len(r.versions) != 0 {
		t.Fatalf("a full map kept %d versions in epoch %d (was %d)", len(r.versions), r.epoch, e)
	}
}
