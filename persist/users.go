package persist

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/elysia-go/elysia/store"
	"github.com/elysia-go/elysia/tree"
)

// userConfig is what a user's config column holds: the tree changes made
// for all of the user's conversations.
type userConfig struct {
	TreeOps []tree.Op `json:"tree_ops"`
}

// LoadUserOps returns the tree changes a user made for all conversations;
// none for an unknown user.
func (p *Store) LoadUserOps(ctx context.Context, userID string) (_ []tree.Op, err error) {
	defer func() { err = notFound(err) }()
	u, err := p.s.GetUser(ctx, userID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var cfg userConfig
	if err := unmarshalIf(u.Config, &cfg); err != nil {
		return nil, fmt.Errorf("user %s: config: %w", userID, err)
	}
	return cfg.TreeOps, nil
}

// SaveUserOps replaces a user's tree changes, creating the user if needed.
func (p *Store) SaveUserOps(ctx context.Context, userID string, ops []tree.Op) (err error) {
	defer func() { err = notFound(err) }()
	u, err := p.s.GetUser(ctx, userID)
	if errors.Is(err, store.ErrNotFound) {
		u, err = &store.User{ID: userID}, nil
	}
	if err != nil {
		return err
	}
	b, err := json.Marshal(userConfig{TreeOps: nonNil(ops)})
	if err != nil {
		return err
	}
	u.Config = b
	return p.s.SaveUser(ctx, u)
}
