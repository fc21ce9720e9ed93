package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/elysia-go/elysia/store"
	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
)

// treeStore adapts *store.Store to tree.Store (with List and Delete): the
// tree's conversation state goes into the store's JSON columns.
type treeStore struct{ s *store.Store }

var (
	_ tree.Store        = treeStore{}
	_ tree.StoreLister  = treeStore{}
	_ tree.StoreDeleter = treeStore{}
)

func (a treeStore) Load(ctx context.Context, userID, convID string) (tree.ConversationState, bool, error) {
	c, err := a.s.GetConversation(ctx, userID, convID)
	if errors.Is(err, store.ErrNotFound) {
		return tree.ConversationState{}, false, nil
	}
	if err != nil {
		return tree.ConversationState{}, false, err
	}
	st := tree.ConversationState{
		UserID:         c.UserID,
		ConversationID: c.ID,
		Title:          c.Title,
		InitMode:       tree.InitMode(c.InitMode),
		UpdatedAt:      c.UpdatedAt,
	}
	if err := unmarshalIf(c.TreeOps, &st.Ops); err != nil {
		return st, false, fmt.Errorf("conversation %s/%s: tree ops: %w", userID, convID, err)
	}
	if err := unmarshalIf(c.History, &st.History); err != nil {
		return st, false, fmt.Errorf("conversation %s/%s: history: %w", userID, convID, err)
	}
	if err := unmarshalIf(c.Environment, &st.Environment); err != nil {
		return st, false, fmt.Errorf("conversation %s/%s: environment: %w", userID, convID, err)
	}
	return st, true, nil
}

func unmarshalIf(b json.RawMessage, v any) error {
	if len(b) == 0 {
		return nil
	}
	return json.Unmarshal(b, v)
}

func (a treeStore) Save(ctx context.Context, st tree.ConversationState, events []tools.Envelope) error {
	c := &store.Conversation{UserID: st.UserID, ID: st.ConversationID, Title: st.Title, InitMode: string(st.InitMode)}
	var err error
	if c.TreeOps, err = json.Marshal(nonNil(st.Ops)); err != nil {
		return err
	}
	if c.History, err = json.Marshal(nonNil(st.History)); err != nil {
		return err
	}
	env := st.Environment
	if env == nil {
		env = map[string]map[string][]tools.EnvEntry{}
	}
	if c.Environment, err = json.Marshal(env); err != nil {
		return err
	}
	// Both saves create the user when needed, in their own transaction.
	if events == nil {
		return a.s.SaveConversation(ctx, c)
	}
	raw := make([]json.RawMessage, len(events))
	queryID := ""
	for i, ev := range events {
		if raw[i], err = tools.Marshal(ev); err != nil {
			return err
		}
		queryID = ev.QueryID
	}
	return a.s.SaveQuery(ctx, c, queryID, raw)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (a treeStore) List(ctx context.Context, userID string) ([]tree.ConversationInfo, error) {
	list, err := a.s.ListConversations(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := make([]tree.ConversationInfo, len(list))
	for i, c := range list {
		out[i] = tree.ConversationInfo{ConversationID: c.ID, Title: c.Title, UpdatedAt: c.UpdatedAt}
	}
	return out, nil
}

func (a treeStore) Delete(ctx context.Context, userID, convID string) error {
	err := a.s.DeleteConversation(ctx, userID, convID)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("conversation %q of %q: %w", convID, userID, tree.ErrNotFound)
	}
	return err
}

var _ tree.UserStore = treeStore{}

// userConfig is what the store keeps in a user's config column.
type userConfig struct {
	TreeOps []tree.Op `json:"tree_ops"`
}

func (a treeStore) LoadUserOps(ctx context.Context, userID string) ([]tree.Op, error) {
	u, err := a.s.GetUser(ctx, userID)
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

func (a treeStore) SaveUserOps(ctx context.Context, userID string, ops []tree.Op) error {
	u, err := a.s.GetUser(ctx, userID)
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
	return a.s.SaveUser(ctx, u)
}
