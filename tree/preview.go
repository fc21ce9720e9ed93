package tree

import "context"

// Preview returns the tree conversation (userID, conversationID) runs on,
// and whether the conversation exists: its own tree when it exists (in
// memory or in the Store), else the tree it would be created with (the
// user's own ops on the default tree of the user's tree mode). Unlike
// [Manager.Conversation] it creates nothing, so that a page showing a
// conversation nobody has asked anything yet leaves nothing behind. The
// tree must not be changed.
func (m *Manager) Preview(ctx context.Context, userID, conversationID string) (t *Tree, exists bool, err error) {
	c, ok, err := m.Existing(ctx, userID, conversationID)
	if err != nil {
		return nil, false, err
	}
	if ok {
		return m.treeOf(c), true, nil
	}
	// What lookup gives a conversation it creates (see insertLocked).
	_, _, userOps, prof, err := m.fetch(ctx, userID, conversationID, true)
	if err != nil {
		return nil, false, err
	}
	mode := m.opts.DefaultMode
	if prof != nil && prof.InitMode != "" {
		mode = prof.InitMode
	}
	return m.treeFor(m.reg.load(), mode, userOps, nil, 0), false, nil
}
