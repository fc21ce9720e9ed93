package persist

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/elysia-go/elysia/store"
	"github.com/elysia-go/elysia/tree"
)

// Profile implements tree.Profiles: the profile of the config in force
// (see DefaultConfig); the zero Profile when the user has none.
func (p *Store) Profile(ctx context.Context, userID string) (_ tree.Profile, err error) {
	defer func() { err = notFound(err) }()
	sp, _, err := p.DefaultConfig(ctx, userID)
	return sp.Profile, err
}

// SaveConfig creates or replaces one of the user's configs; when sp.Default
// is set it becomes the user's default.
func (p *Store) SaveConfig(ctx context.Context, userID string, sp tree.SavedProfile) (err error) {
	defer func() { err = notFound(err) }()
	body, err := json.Marshal(sp.Profile)
	if err != nil {
		return err
	}
	return p.s.SaveUserConfig(ctx, &store.UserConfig{UserID: userID, ID: sp.ID, Name: sp.Name, Default: sp.Default, Body: body})
}

// Config returns one of the user's configs; a missing one is an error
// matching tree.ErrNotFound.
func (p *Store) Config(ctx context.Context, userID, configID string) (_ tree.SavedProfile, err error) {
	defer func() { err = notFound(err) }()
	c, err := p.s.GetUserConfig(ctx, userID, configID)
	if err != nil {
		return tree.SavedProfile{}, notFound(err)
	}
	return savedProfile(c)
}

// DefaultConfig returns the config in force for the user: the one saved as
// the default, else the one saved under tree.BuiltinProfileID (reported as
// the default); ok is false when neither exists.
func (p *Store) DefaultConfig(ctx context.Context, userID string) (sp tree.SavedProfile, ok bool, err error) {
	defer func() { err = notFound(err) }()
	c, err := p.s.InForceUserConfig(ctx, userID, tree.BuiltinProfileID)
	if errors.Is(err, store.ErrNotFound) {
		return tree.SavedProfile{}, false, nil
	}
	if err != nil {
		return tree.SavedProfile{}, false, err
	}
	sp, err = savedProfile(c)
	return sp, err == nil, err
}

// Configs returns the user's configs, the most recently saved first.
func (p *Store) Configs(ctx context.Context, userID string) (_ []tree.SavedProfile, err error) {
	defer func() { err = notFound(err) }()
	list, err := p.s.ListUserConfigs(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := make([]tree.SavedProfile, 0, len(list))
	for i := range list {
		sp, err := savedProfile(&list[i])
		if err != nil {
			return nil, err
		}
		out = append(out, sp)
	}
	return out, nil
}

// DeleteConfig removes one of the user's configs; a missing one is an
// error matching tree.ErrNotFound.
func (p *Store) DeleteConfig(ctx context.Context, userID, configID string) (err error) {
	defer func() { err = notFound(err) }()
	return notFound(p.s.DeleteUserConfig(ctx, userID, configID))
}

func savedProfile(c *store.UserConfig) (tree.SavedProfile, error) {
	sp := tree.SavedProfile{ID: c.ID, Name: c.Name, Default: c.Default, Updated: c.UpdatedAt}
	if err := json.Unmarshal(c.Body, &sp.Profile); err != nil {
		return tree.SavedProfile{}, fmt.Errorf("config %q of user %q: %w", c.ID, c.UserID, err)
	}
	return sp, nil
}
