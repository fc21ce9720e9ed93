package persist_test

import (
	"errors"
	"testing"

	"github.com/elysia-go/elysia/tree"
)

func TestConfigs(t *testing.T) {
	p, _ := openStore(t)
	ctx := t.Context()
	var _ tree.Profiles = p
	if prof, err := p.Profile(ctx, "alice"); err != nil || prof != (tree.Profile{}) {
		t.Fatalf("profile of a user without configs = %+v, %v; want the zero Profile", prof, err)
	}
	terse := tree.Profile{Style: "Terse.", AgentDescription: "Keeps lists.", EndGoal: "Done.", InitMode: tree.Empty}
	if err := p.SaveConfig(ctx, "alice", tree.SavedProfile{ID: "a", Name: "Terse", Default: true, Profile: terse}); err != nil {
		t.Fatal(err)
	}
	if err := p.SaveConfig(ctx, "alice", tree.SavedProfile{ID: "b", Name: "Other", Profile: tree.Profile{Style: "Chatty."}}); err != nil {
		t.Fatal(err)
	}
	if prof, err := p.Profile(ctx, "alice"); err != nil || prof != terse {
		t.Errorf("alice's profile = %+v, %v; want %+v", prof, err, terse)
	}
	if d, ok, err := p.DefaultConfig(ctx, "alice"); !ok || err != nil || d.ID != "a" || d.Name != "Terse" || d.Updated.IsZero() {
		t.Errorf("DefaultConfig = %+v, %v, %v", d, ok, err)
	}
	if list, err := p.Configs(ctx, "alice"); err != nil || len(list) != 2 || list[0].ID != "b" {
		t.Errorf("Configs = %+v, %v; want b then a", list, err)
	}
	if prof, _ := p.Profile(ctx, "bob"); prof != (tree.Profile{}) {
		t.Errorf("bob got %+v, alice's profile", prof)
	}
	if err := p.DeleteConfig(ctx, "alice", "missing"); !errors.Is(err, tree.ErrNotFound) {
		t.Errorf("DeleteConfig of a missing config = %v, want tree.ErrNotFound", err)
	}
	if _, err := p.Config(ctx, "alice", "missing"); !errors.Is(err, tree.ErrNotFound) {
		t.Errorf("Config of a missing config = %v, want tree.ErrNotFound", err)
	}
}
