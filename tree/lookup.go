package tree

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Conversation returns the conversation (userID, conversationID), creating
// it with the default tree, or loading it from the Store on first touch.
func (m *Manager) Conversation(ctx context.Context, userID, conversationID string) (*Conversation, error) {
	c, _, err := m.load(ctx, userID, conversationID, true)
	return c, err
}

// queryConversation is [Manager.Conversation] for a query about to run on
// the conversation: one it creates is not saved here, since the query
// saves it at its end, but created is set so that the caller saves it with
// [Manager.saveCreated] should the query end without saving.
func (m *Manager) queryConversation(ctx context.Context, userID, conversationID string) (c *Conversation, created bool, err error) {
	c, _, created, err = m.lookup(ctx, userID, conversationID, true)
	return c, created, err
}

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
	m.forget(convKey{userID, conversationID})
}

// load returns the conversation from memory, or loads it from the Store;
// when it exists in neither, it creates it if create is set and otherwise
// returns ok false. A load that overlaps a Delete of the conversation fails
// with errDeleted rather than bring it back; one that overlaps a drop from
// memory loads again (see pending).
func (m *Manager) load(ctx context.Context, userID, conversationID string, create bool) (c *Conversation, ok bool, err error) {
	c, ok, created, err := m.lookup(ctx, userID, conversationID, create)
	if created {
		// Its first query may come much later: it reads the profile then.
		m.mu.Lock()
		c.firstProfile = nil
		m.mu.Unlock()
		// A new conversation exists from now on (GET /tree "creates the
		// conversation"): saved, so it is listed and survives a restart
		// like any other.
		m.saveNew(ctx, c)
	}
	return c, ok, err
}

// lookup is load without the save of a conversation it creates: created
// reports that it made c, new, and counted the creation as a change to
// save, so that c stays in memory until it is saved.
func (m *Manager) lookup(ctx context.Context, userID, conversationID string, create bool) (c *Conversation, ok, created bool, err error) {
	k := convKey{userID, conversationID}
	for {
		m.mu.Lock()
		c = m.getLocked(k)
		var p *pending
		if c == nil {
			p = m.beginLoadLocked(k)
		}
		m.mu.Unlock()
		if c != nil {
			return c, true, false, nil
		}
		var st ConversationState
		var found bool
		var userOps []Op
		var prof *Profile
		st, found, userOps, prof, err = m.fetch(ctx, userID, conversationID, create)
		m.mu.Lock()
		m.endLoadLocked(k, p)
		c = m.convs[k]
		switch {
		case err != nil:
			c = nil
		case c != nil:
			m.usedLocked(c) // another caller got there first
			ok = true
		case p.deleted:
			err = fmt.Errorf("load conversation %s/%s: %w", userID, conversationID, errDeleted)
		case p.dropped:
			m.mu.Unlock()
			continue // what was read may be older than what was saved since
		case found || create:
			c, ok = m.insertLocked(k, found, st, userOps, prof), true
			if !found {
				c.changes++ // its creation, saved by the caller
				created = true
			}
		}
		m.mu.Unlock()
		return c, ok, created, err
	}
}

// saveNew saves a conversation just created. A failure is logged, not
// returned: the conversation is usable in memory, is kept there while
// unsaved, and its next change saves it again.
func (m *Manager) saveNew(ctx context.Context, c *Conversation) {
	if err := m.save(ctx, c, nil); err != nil {
		m.logger.WarnContext(ctx, "save new conversation", logKeyUser, c.userID, logKeyConversation, c.id, logKeyErr, err)
	}
}

// saveCreated saves c, a conversation a query created, when nothing of
// it is saved yet: the query ended before its save (it failed to start,
// was busy or was cancelled early) or its save failed. A failure is
// logged, as in saveNew. It saves with a ctx of its own, bounded, since
// the query's may have ended.
func (m *Manager) saveCreated(ctx context.Context, c *Conversation) {
	m.mu.Lock()
	saved := c.saved > 0
	m.mu.Unlock()
	if saved {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	m.saveNew(sctx, c)
}

// insertLocked puts conversation k in memory, restored from st when found
// and otherwise new, with userOps and the tree mode of prof, the user's
// profile (nil: none read), which the conversation's first run may take
// (see Conversation.profileForRun); m.mu is held. Its own tree, if it has
// ops, is built on first use (see treeOf), outside the lock.
func (m *Manager) insertLocked(k convKey, found bool, st ConversationState, userOps []Op, prof *Profile) *Conversation {
	mode := m.opts.DefaultMode
	if !found && prof != nil && prof.InitMode != "" {
		mode = prof.InitMode
	}
	c := newConversation(m, k.user, k.conv, mode)
	if !found {
		c.firstProfile = prof
	}
	if found {
		c.restoreLocked(st)
	} else {
		c.updated = time.Now().UTC() // created now; c is not shared yet
		if len(userOps) > 0 {
			c.ops = slices.Clone(userOps)
		}
	}
	m.cache.insertLocked(k, c)
	return c
}

// fetch reads what load needs from the Store: the saved state, if found,
// and otherwise, when create is set, the user's own ops and profile (nil
// without Options.Profiles), whose InitMode the new conversation starts
// with.
func (m *Manager) fetch(ctx context.Context, userID, conversationID string, create bool) (st ConversationState, found bool, userOps []Op, prof *Profile, err error) {
	if m.opts.Store != nil {
		st, found, err = m.opts.Store.Load(ctx, userID, conversationID)
		if err != nil {
			return st, false, nil, nil, fmt.Errorf("load conversation %s/%s: %w", userID, conversationID, err)
		}
	}
	if !found && create {
		if userOps, err = m.userOpsOf(ctx, userID); err != nil {
			return st, false, nil, nil, err
		}
		if m.opts.Profiles != nil {
			p := m.profile(ctx, userID)
			if p.InitMode != "" {
				if _, perr := ParseInitMode(string(p.InitMode)); perr != nil {
					m.logger.WarnContext(ctx, "the user's profile names an unknown tree mode; using the default", logKeyUser, userID, logKeyErr, perr)
					p.InitMode = ""
				}
			}
			prof = &p
		}
	}
	return st, found, userOps, prof, nil
}

// lockCurrent locks m.mu and returns the Manager's copy of c: c, or, when
// c was dropped from memory (evicted or forgotten) after it was looked up,
// the copy loaded again, so that a change is never made to a dropped copy
// that the Store's is newer than. It fails with errDeleted, m.mu unlocked,
// when the conversation was deleted.
func (m *Manager) lockCurrent(ctx context.Context, c *Conversation, what string) (*Conversation, error) {
	for {
		m.mu.Lock()
		if c.deleted {
			m.mu.Unlock()
			return nil, fmt.Errorf("%s conversation %s/%s: %w", what, c.userID, c.id, errDeleted)
		}
		if m.currentLocked(c) {
			return c, nil
		}
		m.mu.Unlock()
		next, err := m.reload(ctx, c, what)
		if err != nil {
			return nil, err
		}
		c = next
	}
}

// reload returns the conversation that replaces c, a copy dropped from
// memory (evicted or forgotten), loading it from the Store if need be. It
// never creates one: a copy is dropped only once everything in it is
// saved, so a conversation the Store no longer has was deleted, and
// creating it again would bring a deleted conversation back.
func (m *Manager) reload(ctx context.Context, c *Conversation, what string) (*Conversation, error) {
	next, ok, err := m.load(ctx, c.userID, c.id, false)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%s conversation %s/%s: %w", what, c.userID, c.id, errDeleted)
	}
	return next, nil
}
