package tree

import "context"

// Existing returns the conversation when it is in memory or saved in the
// Store, without creating it; ok is false when it exists nowhere.
func (m *Manager) Existing(ctx context.Context, userID, conversationID string) (c *Conversation, ok bool, err error) {
	return m.load(ctx, userID, conversationID, false)
}

// Forget drops the in-memory copy of a conversation that is not running a
// query and has nothing unsaved, so that the next access loads it from the
// Store again. With several replicas sharing one database, a replica calls
// it before serving a conversation another replica may have changed.
//
// Forget reads the query token (c.sem) under m.mu, and Run, once it holds
// the token, checks under m.mu that its conversation is still the
// Manager's copy (see acquireCurrent). So either Forget sees the token
// taken and keeps the copy, or Run sees the copy dropped and runs on the
// Manager's current copy instead: a query never runs on a dropped copy.
func (m *Manager) Forget(userID, conversationID string) {
	if m.opts.Store == nil {
		return // memory is the only copy
	}
	k := convKey{userID, conversationID}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.convs[k]; c != nil && c.idleLocked() {
		m.dropLocked(k, c)
	}
}
