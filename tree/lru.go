package tree

import "math"

// defaultMaxConversations is the default of [Options.MaxConversations].
const defaultMaxConversations = 50_000

// lruList links the conversations in memory through their newer and older
// fields, most recently used first. It is guarded by Manager.mu, and kept
// only when the Manager bounds its conversations (Manager.bounded).
//
// tick counts the conversations put at the front, and a conversation's
// movedAt is the tick it was last put there at: at most tick-movedAt
// conversations are in front of it.
type lruList struct {
	head, tail *Conversation
	tick       uint64
}

// pushFront puts c, not in the list, at the front and returns its tick.
func (l *lruList) pushFront(c *Conversation) uint64 {
	c.newer, c.older = nil, l.head
	if l.head != nil {
		l.head.newer = c
	} else {
		l.tail = c
	}
	l.head = c
	l.tick++
	return l.tick
}

// remove unlinks c; it does nothing when c is not in the list.
func (l *lruList) remove(c *Conversation) {
	if l.head != c && c.newer == nil {
		return
	}
	if c.newer != nil {
		c.newer.older = c.older
	} else {
		l.head = c.older
	}
	if c.older != nil {
		c.older.newer = c.newer
	} else {
		l.tail = c.newer
	}
	c.newer, c.older = nil, nil
}

// moveToFront puts c, in the list, at the front and returns its tick.
func (l *lruList) moveToFront(c *Conversation) uint64 {
	if l.head == c {
		return l.tick
	}
	l.remove(c)
	return l.pushFront(c)
}

// bounded reports whether the Manager drops idle conversations from memory:
// only when they can be loaded again from a Store.
func (m *Manager) bounded() bool {
	return m.opts.Store != nil && m.opts.MaxConversations > 0
}

// lruSlack returns how many ticks a conversation may fall behind the front
// of the lru list before a use of it moves it back there: a quarter of
// MaxConversations, or no number of them when the Manager is not bounded.
func (m *Manager) lruSlack() uint64 {
	if !m.bounded() {
		return math.MaxUint64
	}
	return uint64(m.opts.MaxConversations / 4)
}

// usedLocked records a use of c, which is in m.convs; m.mu is held.
//
// c is moved to the front only when it may have fallen out of the newest
// quarter of MaxConversations: one in use stays far from the end the
// evictions take, and the lookups of GET /tree, mostly of recent
// conversations, do not rewrite the list each time.
func (m *Manager) usedLocked(c *Conversation) {
	if m.lru.tick-c.movedAt >= m.slack {
		c.movedAt = m.lru.moveToFront(c)
	}
}

// evictLocked drops the least recently used idle conversations, but not
// keep, while there are more than MaxConversations in memory; m.mu is held.
// keep, just loaded for a caller, stays even when every other conversation
// is busy: dropping it would send the caller to load it again, in a loop.
// One that is not idle is moved to the front, to be looked at again once
// it is the oldest, so every call looks at each conversation at most once.
func (m *Manager) evictLocked(keep *Conversation) {
	if !m.bounded() {
		return
	}
	for n := len(m.convs); n > 0 && len(m.convs) > m.opts.MaxConversations; n-- {
		c := m.lru.tail
		if c == nil || c == keep {
			return
		}
		if !c.idleLocked() {
			c.movedAt = m.lru.moveToFront(c)
			continue
		}
		m.dropLocked(convKey{c.userID, c.id}, c)
	}
}

// idleLocked reports whether c can be dropped from memory and loaded again
// from the Store without losing anything: no query holds the query token
// (one waiting for it finds c dropped once it has it, see acquireCurrent),
// no save is in flight and every change has been saved. m.mu is held.
func (c *Conversation) idleLocked() bool {
	return len(c.sem) == 0 && len(c.saving) == 0 && c.changes == c.saved
}

// dropLocked removes c, the conversation k, from memory; m.mu is held. A
// load of k in flight may have read the Store before c's last save: it is
// marked, so that it loads again instead of inserting what it read.
func (m *Manager) dropLocked(k convKey, c *Conversation) {
	delete(m.convs, k)
	m.lru.remove(c)
	if p := m.pending[k]; p != nil {
		p.dropped = true
		if p.deletes == 0 {
			delete(m.pending, k) // loads from now on read the saved state
		}
	}
}
