package tree

import "sync"

type convKey struct{ user, conv string }

// pending records the loads and Deletes of one conversation that are in
// flight. A load may read the saved state before a Delete removes it and
// finish after the Delete: whatever it read then belongs to a deleted
// conversation and must not be put in cache.convs. So a Delete marks the
// loads in flight, and the loads that start before it has removed the
// conversation from the Store, as deleted. Likewise, a load may read the
// saved state, then another load insert the conversation, which changes,
// is saved and is dropped from memory (evicted or forgotten) before the
// first load finishes: the drop marks the first load, which loads again.
// The entry leaves cache.pending when neither a load nor a Delete of the
// key is in flight, or when the conversation is dropped.
type pending struct {
	loads   int  // loads in flight
	deletes int  // Deletes in flight
	deleted bool // a Delete overlapped the loads
	dropped bool // the conversation was dropped from memory during the loads
}

// cache holds the conversations in memory, keyed by user and conversation
// id, with the least-recently-used order that bounds them (lru.go) and the
// loads and Deletes in flight. It does no I/O: the Manager reads the Store
// between the calls that begin and end a load or a Delete.
//
// The Manager embeds its cache, so cache.mu is Manager.mu.
type cache struct {
	// max bounds the conversations in memory when positive; see bounded.
	max int
	// slack is how far a conversation may fall behind the front of lru
	// before a use moves it back; see lruSlack.
	slack uint64

	// mu guards convs, lru, pending, and the fields of every Conversation
	// that say so.
	mu    sync.Mutex
	convs map[convKey]*Conversation
	// lru orders convs by use when the cache is bounded.
	lru lruList
	// pending holds the keys with loads from the Store or Deletes in
	// flight; see pending.
	pending map[convKey]*pending
}

// init makes an empty cache, bounded to max conversations when max > 0.
func (ca *cache) init(max int) {
	ca.max = max
	ca.slack = ca.lruSlack()
	ca.convs = map[convKey]*Conversation{}
	ca.pending = map[convKey]*pending{}
}

// getLocked returns conversation k when it is in memory and records the
// use; ca.mu is held.
func (ca *cache) getLocked(k convKey) *Conversation {
	c := ca.convs[k]
	if c != nil {
		ca.usedLocked(c)
	}
	return c
}

// currentLocked reports whether c is the copy of its conversation in
// memory: not dropped (evicted or forgotten) nor deleted; ca.mu is held.
func (ca *cache) currentLocked(c *Conversation) bool {
	return ca.convs[convKey{c.userID, c.id}] == c
}

// beginLoadLocked records a load of k from the Store and returns its
// pending entry, which the load hands to endLoadLocked; ca.mu is held.
func (ca *cache) beginLoadLocked(k convKey) *pending {
	p := ca.pendingLocked(k)
	p.loads++
	return p
}

// endLoadLocked ends a load of k begun with p; ca.mu is held. The caller
// then looks at p.deleted and p.dropped to decide what the load read is
// worth.
func (ca *cache) endLoadLocked(k convKey, p *pending) {
	p.loads--
	ca.releaseLocked(k, p)
}

// insertLocked puts c, just loaded or created as conversation k, in memory,
// and evicts others if the cache is over its bound; ca.mu is held.
func (ca *cache) insertLocked(k convKey, c *Conversation) {
	ca.convs[k] = c
	if ca.bounded() {
		c.movedAt = ca.lru.pushFront(c)
		ca.evictLocked(c)
	}
}

// beginDelete removes conversation k from memory and marks it and the
// loads of k in flight as deleted. It returns the copy that was in memory,
// if any, and the pending entry to hand to endDelete once the Store has
// deleted the conversation.
func (ca *cache) beginDelete(k convKey) (*Conversation, *pending) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	c := ca.convs[k]
	delete(ca.convs, k)
	if c != nil {
		c.deleted = true
		ca.lru.remove(c)
	}
	p := ca.pendingLocked(k)
	p.deletes++
	p.deleted = true
	return c, p
}

// endDelete ends a Delete of k begun with p.
func (ca *cache) endDelete(k convKey, p *pending) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	p.deletes--
	if p.deletes == 0 && ca.pending[k] == p {
		// Loads that start from now on read the Store after the row is
		// gone.
		delete(ca.pending, k)
	}
}

// forget drops conversation k from memory if it is idle.
func (ca *cache) forget(k convKey) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if c := ca.convs[k]; c != nil && c.idleLocked() {
		ca.dropLocked(k, c)
	}
}

// ofUser returns the conversations of userID in memory, in no order.
func (ca *cache) ofUser(userID string) []*Conversation {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	var mine []*Conversation
	for k, c := range ca.convs {
		if k.user == userID {
			mine = append(mine, c)
		}
	}
	return mine
}

// pendingLocked returns the pending entry of k, adding it when missing.
func (ca *cache) pendingLocked(k convKey) *pending {
	p := ca.pending[k]
	if p == nil {
		p = &pending{}
		ca.pending[k] = p
	}
	return p
}

// releaseLocked drops k's pending entry p once nothing is in flight.
func (ca *cache) releaseLocked(k convKey, p *pending) {
	if p.loads == 0 && p.deletes == 0 && ca.pending[k] == p {
		delete(ca.pending, k)
	}
}
