package tree

import (
	"context"
	"fmt"
)

// Existing returns the conversation when it is in memory or saved in the
// Store, without creating it; ok is false when it exists nowhere.
func (m *Manager) Existing(ctx context.Context, userID, conversationID string) (c *Conversation, ok bool, err error) {
	m.mu.Lock()
	c = m.convs[convKey{userID, conversationID}]
	m.mu.Unlock()
	if c != nil {
		return c, true, nil
	}
	if m.opts.Store == nil {
		return nil, false, nil
	}
	if _, found, err := m.opts.Store.Load(ctx, userID, conversationID); err != nil || !found {
		if err != nil {
			err = fmt.Errorf("load conversation %s/%s: %w", userID, conversationID, err)
		}
		return nil, false, err
	}
	c, err = m.Conversation(ctx, userID, conversationID)
	return c, err == nil, err
}

// Forget drops the in-memory copy of a conversation that is not running a
// query, so that the next access loads it from the Store again. With several
// replicas sharing one database, a replica calls it before serving a
// conversation another replica may have changed.
func (m *Manager) Forget(userID, conversationID string) {
	if m.opts.Store == nil {
		return // memory is the only copy
	}
	k := convKey{userID, conversationID}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.convs[k]; c != nil && len(c.sem) == 0 {
		delete(m.convs, k)
	}
}
