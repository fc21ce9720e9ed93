package tree

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree/prompt"
)

// saver writes conversations to the Store in order. Each Conversation has
// a saving token, a one-slot channel held from reading the state to be
// saved until the Store has it, and by a Delete while the Store deletes the
// conversation: so saves of a conversation land in the order their states
// were read (the last save writes the newest state), and a save never
// lands after the Delete of its conversation.
//
// The counts that say whether a conversation has unsaved changes
// (Conversation.changes and saved) and its deleted mark are guarded by the
// cache's mu, which is taken after the token, never before it.
type saver struct {
	store Store // nil: memory only, nothing is saved
	cache *cache
}

// save writes c's state (and a query's events) to the Store, if any, unless
// c was deleted. With a [StoreAppender] it sends only what changed since
// the last save, and results, the payloads of the result events among
// events by envelope ID (nil: none known).
func (s *saver) save(ctx context.Context, c *Conversation, events []tools.Envelope, results map[string]tools.ResultPayload) error {
	if s.store == nil {
		return nil
	}
	if err := lock(ctx, c.saving); err != nil {
		return fmt.Errorf("save conversation %s/%s: %w", c.userID, c.id, err)
	}
	defer func() { <-c.saving }()
	s.cache.mu.Lock()
	deleted, changes, sv := c.deleted, c.changes, c.sv
	s.cache.mu.Unlock()
	if deleted {
		return nil
	}
	if a, ok := s.store.(StoreAppender); ok {
		return s.append(ctx, a, c, sv, changes, events, results)
	}
	st := c.State()
	if err := s.store.Save(ctx, st, events); err != nil {
		return fmt.Errorf("save conversation %s/%s: %w", c.userID, c.id, err)
	}
	s.cache.mu.Lock()
	// st holds at least the changes counted before it was read.
	c.saved = max(c.saved, changes)
	s.cache.mu.Unlock()
	return nil
}

// append saves what changed in c since sv (nil: nothing of c is saved) and
// events; s.save holds c's saving token. The new saved state knows the
// Store's version only when no other save came between (the version is
// one more than sv's); otherwise, and after a failed save, the version is
// unknown (0), so that the next query under a Locker reloads the
// conversation rather than run on a copy older than another replica's
// save.
//
// A query's save that fails may have gone through all the same (its
// commit was acknowledged after the deadline, or the connection broke
// after it): sending what it held again as part of a later change would
// write it twice. So it is kept as it was (c.unsaved) and sent again,
// unchanged, before anything newer: the Store keys a query's save by its
// SaveKey and writes it once whichever happened.
func (s *saver) append(ctx context.Context, a StoreAppender, c *Conversation, sv *savedState, changes uint64, events []tools.Envelope, results map[string]tools.ResultPayload) error {
	if sv == nil {
		sv = &savedState{}
	}
	if u := c.unsaved; u != nil {
		if _, err := a.Append(ctx, u.ch, u.events); err != nil {
			return fmt.Errorf("save conversation %s/%s: %w", c.userID, c.id, err)
		}
		c.unsaved = nil
		sv = &savedState{messages: u.messages, results: u.results} // the version is unknown
		s.cache.mu.Lock()
		c.sv = sv
		c.saved = max(c.saved, u.changes)
		s.cache.mu.Unlock()
	}
	ch, counts := c.change(sv, events != nil)
	ch.ResultPayloads = results
	if len(events) > 0 {
		ch.SaveKey = newSaveKey()
	}
	version, err := a.Append(ctx, ch, events)
	next := &savedState{messages: sv.messages, results: sv.results}
	if err == nil {
		next.messages, next.results = sv.messages+len(ch.Messages), counts
		if version == sv.version+1 {
			next.version = version
		}
	} else if len(events) > 0 { // a query's save, keyed by its query
		c.unsaved = &unsavedQuery{ch: ch, events: events, messages: sv.messages + len(ch.Messages), results: counts, changes: changes}
	}
	s.cache.mu.Lock()
	c.sv = next
	if err == nil {
		// ch holds at least the changes counted before it was read.
		c.saved = max(c.saved, changes)
	}
	s.cache.mu.Unlock()
	if err != nil {
		return fmt.Errorf("save conversation %s/%s: %w", c.userID, c.id, err)
	}
	return nil
}

// newSaveKey returns a fresh random key for a query's save.
func newSaveKey() string {
	var raw [16]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(raw[:])
}

// unsavedQuery is a query's save that failed, to send again as it was:
// the change and events sent, and what the Store holds of the
// conversation once it has them (messages, results) with the changes they
// cover.
type unsavedQuery struct {
	ch       ConversationChange
	events   []tools.Envelope
	messages int
	results  map[prompt.ResultKey]int
	changes  uint64
}

// changed counts a change to c that is not saved yet.
func (s *saver) changed(c *Conversation) {
	s.cache.mu.Lock()
	c.changes++
	s.cache.mu.Unlock()
}

// remove deletes conversation userID/conversationID from the Store when it
// implements [StoreDeleter]. c, the copy that was in memory (nil if none),
// is already marked deleted: a save of it that started before ends before
// the row is deleted, and any later one sees the mark and skips.
func (s *saver) remove(ctx context.Context, c *Conversation, userID, conversationID string) error {
	d, ok := s.store.(StoreDeleter)
	if !ok {
		return nil
	}
	if c != nil {
		if err := lock(ctx, c.saving); err != nil {
			return fmt.Errorf("delete conversation %s/%s: %w", userID, conversationID, err)
		}
		defer func() { <-c.saving }()
	}
	if err := d.Delete(ctx, userID, conversationID); err != nil {
		return fmt.Errorf("delete conversation %s/%s: %w", userID, conversationID, err)
	}
	return nil
}

// lock takes the token of tok, a one-slot channel used as a lock that may
// be held across a Store call, or gives up when ctx ends.
func lock(ctx context.Context, tok chan struct{}) error {
	select {
	case tok <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
