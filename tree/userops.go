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

// users holds the tokens that order each user's own tree changes (see
// ApplyUser) and, when the Store keeps no user ops, the ops themselves. Its
// mu is taken alone, never with another lock.
type users struct {
	// mu guards ops and locks.
	mu sync.Mutex
	// ops are each user's own ops when the Store is not a UserStore (or
	// there is none): memory is then their only copy, kept like the
	// conversations of a Manager without a Store. With a UserStore it
	// stays empty and the Store is read each time, since another replica
	// may have changed them (DESIGN: no state lives in one replica only).
	ops map[string][]Op
	// locks holds a token for each user with an ApplyUser running or
	// waiting; an entry goes when the last of them is done, so the map
	// holds only the users being changed.
	locks map[string]*userLock
}

// userLock is a user's token, a one-slot channel, and how many ApplyUser
// calls hold it or wait for it.
type userLock struct {
	tok  chan struct{}
	refs int
}

// acquire takes userID's token, waiting until ctx ends. release gives it
// back, and drops the entry when no one else holds it or waits for it.
func (u *users) acquire(ctx context.Context, userID string) (release func(), err error) {
	u.mu.Lock()
	l := u.locks[userID]
	if l == nil {
		l = &userLock{tok: make(chan struct{}, 1)}
		u.locks[userID] = l
	}
	l.refs++
	u.mu.Unlock()
	done := func() {
		u.mu.Lock()
		defer u.mu.Unlock()
		if l.refs--; l.refs == 0 {
			delete(u.locks, userID)
		}
	}
	if err := lock(ctx, l.tok); err != nil {
		done()
		return nil, err
	}
	return func() {
		<-l.tok
		done()
	}, nil
}

// userOpsOf returns the user's own ops: from the Store when it is a
// UserStore, read each time (a new conversation costs one more small
// read), since another replica may have changed them; from memory
// otherwise.
func (m *Manager) userOpsOf(ctx context.Context, userID string) ([]Op, error) {
	if us, ok := m.opts.Store.(UserStore); ok {
		ops, err := us.LoadUserOps(ctx, userID)
		if err != nil {
			return nil, fmt.Errorf("load tree changes of user %s: %w", userID, err)
		}
		return ops, nil
	}
	m.users.mu.Lock()
	defer m.users.mu.Unlock()
	return m.users.ops[userID], nil
}

// ApplyUser performs op on every conversation of the user and records it
// as the user's own, so conversations the user creates later start with it.
// It returns the tree a new conversation of the user would get. An op that
// does not apply to the user's default tree is an error and changes nothing;
// a conversation it does not apply to (its tree was changed otherwise) is
// skipped with a warning, and one deleted meanwhile is skipped.
//
// Calls for the same user in this process run one at a time (the user's
// token in users.locks is held throughout, across the Store calls), so
// that each builds on the ops of the one before, saves land in order, and
// every conversation gets the ops in the same order. Each reads the user's
// ops from the Store under the token, so it builds on the changes other
// replicas made before it too.
func (m *Manager) ApplyUser(ctx context.Context, userID string, op Op) (*Tree, error) {
	release, err := m.users.acquire(ctx, userID)
	if err != nil {
		return nil, fmt.Errorf("change the tree of user %s: %w", userID, err)
	}
	defer release()

	// Only a caller holding the token changes the user's ops in this
	// process, so they stay as read here until this call saves them.
	ops, err := m.userOpsOf(ctx, userID)
	if err != nil {
		return nil, err
	}
	s := m.reg.load()
	preview := s.defaultTree(m.opts.DefaultMode).Clone()
	for _, o := range ops {
		_ = o.apply(preview, s.tools) // replayed as on a reload
	}
	if err := op.apply(preview, s.tools); err != nil {
		return nil, err
	}
	next := append(slices.Clip(ops), op)
	if us, ok := m.opts.Store.(UserStore); ok {
		if err := us.SaveUserOps(ctx, userID, next); err != nil {
			return nil, fmt.Errorf("save tree changes of user %s: %w", userID, err)
		}
	} else {
		m.users.mu.Lock()
		m.users.ops[userID] = next
		m.users.mu.Unlock()
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
			m.logger.WarnContext(ctx, "tree change skipped for a conversation", logKeyUser, userID,
				logKeyConversation, ci.ConversationID, logKeyOp, op.Kind, logKeyErr, err)
		}
	}
	return preview, nil
}
