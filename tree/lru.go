package tree

import "math"

// defaultMaxConversations is the default of [Options.MaxConversations].
const defaultMaxConversations = 50_000

// lruList links the conversations in memory through their newer and older
// fields, most recently used first. It is guarded by cache.mu, and kept
// only when the cache is bounded (cache.bounded).
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

// bounded reports whether the cache drops idle conversations from memory.
// The Manager bounds it only when conversations can be loaded again from a
// Store.
func (ca *cache) bounded() bool { return ca.max > 0 }

// lruSlack returns how many ticks a conversation may fall behind the front
// of the lru list before a use of it moves it back there: a quarter of the
// bound, or no number of them when the cache is not bounded.
func (ca *cache) lruSlack() uint64 {
	if !ca.bounded() {
		return math.MaxUint64
	}
	return uint64(ca.max / 4)
}

// usedLocked records a use of c, which is in ca.convs; ca.mu is held.
//
// c is moved to the front only when it may have fallen out of the newest
// quarter of the bound: one in use stays far from the end the evictions
// take, and the lookups of GET /tree, mostly of recent conversations, do
// not rewrite the list each time.
func (ca *cache) usedLocked(c *Conversation) {
	if ca.lru.tick-c.movedAt >= ca.slack {
		c.movedAt = ca.lru.moveToFront(c)
	}
}

// evictLocked drops the least recently used idle conversations, but not
// keep, while there are more than the bound in memory; ca.mu is held.
// keep, just loaded for a caller, stays even when every other conversation
// is busy: dropping it would send the caller to load it again, in a loop.
// One that is not idle is moved to the front, to be looked at again once
// it is the oldest, so every call looks at each conversation at most once.
func (ca *cache) evictLocked(keep *Conversation) {
	if !ca.bounded() {
		return
	}
	for n := len(ca.convs); n > 0 && len(ca.convs) > ca.max; n-- {
		c := ca.lru.tail
		if c == nil || c == keep {
			return
		}
		if !c.idleLocked() {
			c.movedAt = ca.lru.moveToFront(c)
			continue
		}
		ca.dropLocked(convKey{c.userID, c.id}, c)
	}
}

// idleLocked reports whether c can be dropped from memory and loaded again
// from the Store without losing anything: no query holds the query token
// (one waiting for it finds c dropped once it has it, see acquireCurrent),
// no save is in flight and every change has been saved. cache.mu is held.
func (c *Conversation) idleLocked() bool {
	return len(c.sem) == 0 && len(c.saving) == 0 && c.changes == c.saved
}

// dropLocked removes c, the conversation k, from memory; ca.mu is held. A
// load of k in flight may have read the Store before c's last save: it is
// marked, so that it loads again instead of inserting what it read.
func (ca *cache) dropLocked(k convKey, c *Conversation) {
	delete(ca.convs, k)
	ca.lru.remove(c)
	if p := ca.pending[k]; p != nil {
		p.dropped = true
		if p.deletes == 0 {
			delete(ca.pending, k) // loads from now on read the saved state
		}
	}
}
