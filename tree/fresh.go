package tree

import "context"

// forgetStale drops the in-memory copy of conversation userID/conversationID
// when it may be older than what the Store holds, as [Manager.Forget] does,
// but keeps it when the Store's version (see [StoreVersioner]) is the one
// the copy was loaded or last saved at: a query on a conversation this
// replica served last then reads one small row instead of the whole
// conversation. Without a StoreVersioner, or when the version cannot be
// read, the copy is dropped.
func (m *Manager) forgetStale(ctx context.Context, userID, conversationID string) {
	v, ok := m.opts.Store.(StoreVersioner)
	if !ok {
		m.Forget(userID, conversationID)
		return
	}
	m.mu.Lock()
	c := m.convs[convKey{userID, conversationID}]
	var known int64
	if c != nil && c.sv != nil {
		known = c.sv.version
	}
	m.mu.Unlock()
	if c == nil {
		return // not in memory: the next lookup loads it
	}
	if known > 0 {
		stored, found, err := v.Version(ctx, userID, conversationID)
		if err == nil && found && stored == known {
			return
		}
	}
	m.Forget(userID, conversationID)
}
