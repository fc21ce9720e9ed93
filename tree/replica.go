package tree

import (
	"context"
	"errors"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/elysia-go/elysia/tools"
)

// Locker serialises a conversation's queries across the processes that
// share one Store (replicas behind a load balancer). The store package's
// Store satisfies it: a PostgreSQL lease per conversation, or an
// in-process mutex with SQLite.
//
// Lock blocks until the caller holds the conversation's lock or ctx ends,
// in which case it returns an error (ctx's, or one wrapping it). unlock
// releases the lock; it may be called more than once, and must be called.
// Lock is called concurrently for many conversations and is not reentrant.
type Locker interface {
	Lock(ctx context.Context, userID, conversationID string) (unlock func(), err error)
}

// Query runs one query of the conversation (userID, conversationID),
// creating the conversation if needed; see [Conversation.Run] for emit, the
// events and the errors.
//
// With [Options.Locker] set, the query first takes the conversation's lock
// across replicas, waiting up to [Options.QueryWait] (then failing with an
// error matching [ErrBusy], or [ErrStoreUnavailable] when the Locker's
// error does, having emitted nothing), and runs on the state last saved by
// any replica rather than on this process's copy.
func (m *Manager) Query(ctx context.Context, model llms.Model, userID, conversationID, queryID, query string, emit func(tools.Envelope)) error {
	growStack()
	if l := m.opts.Locker; l != nil {
		lockCtx, cancel := context.WithTimeout(ctx, m.opts.QueryWait)
		unlock, err := l.Lock(lockCtx, userID, conversationID)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, ErrStoreUnavailable) {
				return fmt.Errorf("lock conversation %s/%s: %w", userID, conversationID, err)
			}
			return fmt.Errorf("conversation %s/%s is busy with another query: %w: %w", userID, conversationID, ErrBusy, err)
		}
		defer unlock()
		m.forgetStale(ctx, userID, conversationID) // reload what another replica may have saved
	}
	// A conversation the query creates is saved once, with the query,
	// rather than on creation and again after the query.
	c, created, err := m.queryConversation(ctx, userID, conversationID)
	if err != nil {
		return err
	}
	err = c.Run(ctx, model, query, queryID, emit)
	if created {
		m.saveCreated(ctx, c)
	}
	return err
}

// Reopen returns an existing conversation to show it again, as [Manager.Existing]
// does; ok is false when it exists nowhere. With [Options.Locker] set (a Store
// shared between replicas), an idle in-memory copy is dropped first unless
// the Store says it is the latest (see [StoreVersioner]), so that what is
// returned is what any replica saved last.
func (m *Manager) Reopen(ctx context.Context, userID, conversationID string) (c *Conversation, ok bool, err error) {
	if m.opts.Locker != nil {
		m.forgetStale(ctx, userID, conversationID)
	}
	return m.Existing(ctx, userID, conversationID)
}
