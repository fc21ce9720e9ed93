package tree

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// UserStore is implemented by Stores that keep a user's own tree changes:
// the ops applied to all of a user's conversations, which new conversations
// of the user start with (Elysia's per-user tools). LoadUserOps returns nil
// for a user without any.
type UserStore interface {
	LoadUserOps(ctx context.Context, userID string) ([]Op, error)
	SaveUserOps(ctx context.Context, userID string, ops []Op) error
}

// users holds each user's own tree changes (see ApplyUser) and the tokens
// that order them. Its mu is taken alone, never with another lock.
type users struct {
	// mu guards ops and locks.
	mu sync.Mutex
	// ops are each user's own ops, loaded from the Store on first use; a
	// nil entry means the user has none.
	ops map[string][]Op
	// locks holds a one-slot channel per user that has called ApplyUser:
	// a token that orders the user's changes and their saves.
	locks map[string]chan struct{}
}

// token returns userID's token, creating it on first use.
func (u *users) token(userID string) chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	tok := u.locks[userID]
	if tok == nil {
		tok = make(chan struct{}, 1)
		u.locks[userID] = tok
	}
	return tok
}

// userOpsOf returns the user's own ops, loading them from the Store the
// first time.
func (m *Manager) userOpsOf(ctx context.Context, userID string) ([]Op, error) {
	u := &m.users
	u.mu.Lock()
	ops, ok := u.ops[userID]
	u.mu.Unlock()
	if ok {
		return ops, nil
	}
	us, isUS := m.opts.Store.(UserStore)
	if !isUS {
		return nil, nil
	}
	ops, err := us.LoadUserOps(ctx, userID)
	if err != nil {
		return nil, fmt.Errorf("load tree changes of user %s: %w", userID, err)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if cur, ok := u.ops[userID]; ok {
		return cur, nil // another caller got there first
	}
	u.ops[userID] = ops
	return ops, nil
}

// ApplyUser performs op on every conversation of the user and records it
// as the user's own, so conversations the user creates later start with it.
// It returns the tree a new conversation of the user would get. An op that
// does not apply to the user's default tree is an error and changes nothing;
// a conversation it does not apply to (its tree was changed otherwise) is
// skipped with a warning, and one deleted meanwhile is skipped.
//
// Calls for the same user run one at a time (the user's token in
// users.locks is held throughout, across the Store calls), so that each
// builds on the ops of the one before, saves land in order, and every
// conversation gets the ops in the same order.
func (m *Manager) ApplyUser(ctx context.Context, userID string, op Op) (*Tree, error) {
	if _, err := m.userOpsOf(ctx, userID); err != nil {
		return nil, err
	}
	tok := m.users.token(userID)
	if err := lock(ctx, tok); err != nil {
		return nil, fmt.Errorf("change the tree of user %s: %w", userID, err)
	}
	defer func() { <-tok }()

	// Only a caller holding the token changes the user's entry in
	// users.ops, so it stays as read here until this call sets it.
	m.users.mu.Lock()
	ops := m.users.ops[userID]
	m.users.mu.Unlock()
	s := m.reg.load()
	preview := s.defaultTree(m.opts.DefaultMode).Clone()
	for _, o := range ops {
		_ = o.apply(preview, s.tools) // replayed as on a reload
	}
	if err := op.apply(preview, s.tools); err != nil {
		return nil, err
	}
	next := append(slices.Clip(ops), op)
	m.users.mu.Lock()
	m.users.ops[userID] = next
	m.users.mu.Unlock()
	if us, ok := m.opts.Store.(UserStore); ok {
		if err := us.SaveUserOps(ctx, userID, next); err != nil {
			return nil, fmt.Errorf("save tree changes of user %s: %w", userID, err)
		}
	}
	infos, err := m.Conversations(ctx, userID)
	if err != nil {
		return nil, err
	}
	for _, ci := range infos {
		// Existing conversations only: one deleted since it was listed
		// must not be created again.
		c, ok, err := m.load(ctx, userID, ci.ConversationID, false)
		if err == nil && !ok {
			continue
		}
		if err == nil {
			_, err = m.applyTo(ctx, c, op)
		}
		if err != nil && !errors.Is(err, errDeleted) {
			m.logger.WarnContext(ctx, "tree change skipped for a conversation", "user", userID,
				"conversation", ci.ConversationID, "op", op.Kind, "err", err)
		}
	}
	return preview, nil
}
