package store

import (
	"errors"
	"fmt"
	"testing"
)

func testUserConfigs(t *testing.T, newDSN newDSN) {
	t.Helper()
	s := openStore(t, newDSN(t))
	ctx := t.Context()
	if _, err := s.DefaultUserConfig(ctx, "alice"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("default config of a user without any = %v, want ErrNotFound", err)
	}
	save := func(c UserConfig) {
		t.Helper()
		if err := s.SaveUserConfig(ctx, &c); err != nil {
			t.Fatal(err)
		}
	}
	save(UserConfig{UserID: "alice", ID: "a", Name: "Terse", Default: true, Body: []byte(`{"style":"Terse."}`)})
	save(UserConfig{UserID: "alice", ID: "b", Name: "Chatty", Body: []byte(`{"style":"Chatty."}`)})
	save(UserConfig{UserID: "bob", ID: "a", Name: "Bob's", Default: true, Body: []byte(`{}`)})
	if d, err := s.DefaultUserConfig(ctx, "alice"); err != nil || d.ID != "a" || string(d.Body) != `{"style":"Terse."}` {
		t.Fatalf("alice's default = %+v, %v; want a", d, err)
	}

	// Making b the default takes it from a, and only for alice.
	save(UserConfig{UserID: "alice", ID: "b", Name: "Chatty", Default: true, Body: []byte(`{"style":"Chatty!"}`)})
	list, err := s.ListUserConfigs(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != "b" || !list[0].Default || list[1].Default || list[0].UpdatedAt.IsZero() {
		t.Fatalf("alice's configs = %+v, want b (default, saved last) then a", list)
	}
	if d, _ := s.DefaultUserConfig(ctx, "bob"); d == nil || d.ID != "a" {
		t.Errorf("bob's default = %+v, want his own a", d)
	}
	if c, err := s.GetUserConfig(ctx, "alice", "b"); err != nil || c.Name != "Chatty" || string(c.Body) != `{"style":"Chatty!"}` {
		t.Errorf("GetUserConfig(b) = %+v, %v", c, err)
	}

	if err := s.SaveUserConfig(ctx, &UserConfig{UserID: "alice", ID: "c", Name: "x", Body: []byte(`{"style":`)}); err == nil {
		t.Error("a config body that is not JSON was saved")
	}
	if err := s.DeleteUserConfig(ctx, "alice", "b"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteUserConfig(ctx, "alice", "b"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second delete = %v, want ErrNotFound", err)
	}
	if _, err := s.DefaultUserConfig(ctx, "alice"); !errors.Is(err, ErrNotFound) {
		t.Errorf("default after deleting it = %v, want ErrNotFound", err)
	}
	if _, err := s.GetUserConfig(ctx, "alice", "b"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetUserConfig of a deleted config = %v, want ErrNotFound", err)
	}
}

// testUserConfigsConcurrentDefaults saves many defaults of one user at
// once: each save succeeds and exactly one config ends as the default.
func testUserConfigsConcurrentDefaults(t *testing.T, newDSN newDSN) {
	t.Helper()
	s := openStore(t, newDSN(t))
	ctx := t.Context()
	const n = 12
	errs := make(chan error, n)
	for i := range n {
		go func() {
			errs <- s.SaveUserConfig(ctx, &UserConfig{UserID: "alice", ID: fmt.Sprintf("c%d", i), Name: "x", Default: true, Body: []byte(`{}`)})
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("concurrent save of a default: %v", err)
		}
	}
	list, err := s.ListUserConfigs(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	defaults := 0
	for _, c := range list {
		if c.Default {
			defaults++
		}
	}
	if len(list) != n || defaults != 1 {
		t.Errorf("%d configs, %d defaults; want %d and 1", len(list), defaults, n)
	}
}

func testUserConfigInForce(t *testing.T, newDSN newDSN) {
	t.Helper()
	s := openStore(t, newDSN(t))
	ctx := t.Context()
	if _, err := s.InForceUserConfig(ctx, "alice", "default"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("in force without configs = %v, want ErrNotFound", err)
	}
	for _, c := range []UserConfig{
		{UserID: "alice", ID: "default", Name: "Mine", Body: []byte(`{"style":"Saved."}`)},
		{UserID: "alice", ID: "other", Name: "Other", Body: []byte(`{}`)},
	} {
		if err := s.SaveUserConfig(ctx, &c); err != nil {
			t.Fatal(err)
		}
	}
	if c, err := s.InForceUserConfig(ctx, "alice", "default"); err != nil || c.ID != "default" || !c.Default {
		t.Errorf("in force without a default = %+v, %v; want the fallback, as the default", c, err)
	}
	if err := s.SaveUserConfig(ctx, &UserConfig{UserID: "alice", ID: "other", Name: "Other", Default: true, Body: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if c, err := s.InForceUserConfig(ctx, "alice", "default"); err != nil || c.ID != "other" {
		t.Errorf("in force with a default = %+v, %v; want other", c, err)
	}
	if _, err := s.InForceUserConfig(ctx, "bob", "default"); !errors.Is(err, ErrNotFound) {
		t.Errorf("bob's config in force = %v, want ErrNotFound", err)
	}
}
