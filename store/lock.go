package store

import (
	"context"
	"errors"
	"sync"
)

// Lock serialises work on the conversation convID of userID: it blocks until
// no other holder (in any process sharing a PostgreSQL database, or in this
// Store with SQLite) holds the lock, or until ctx ends, in which case it
// returns ctx's error. unlock releases the lock; it may be called more than
// once, and must be called, or the lock stays held until Close (on
// PostgreSQL, until its lease expires).
//
// On PostgreSQL it is a lease: a row of conversation_locks naming a random
// owner token and an expiry, taken when there is none or it has expired,
// renewed in the background while held, deleted on unlock (see lease.go
// for why a lease and what a crashed holder costs). Holding it pins no
// connection, so the locks a replica holds at once, while its queries wait
// for their models, are not bounded by [Options.MaxConns]. Every save of
// the conversation by this Store while it holds the lock checks, in the
// save's own transaction, that the lease is still its own: a holder that
// stalled for longer than the lease's time to live and was taken over
// fails with [ErrLockLost] instead of overwriting the new holder's work.
// On SQLite (one process) it is an in-process mutex per conversation, held
// by this Store only: two Stores on one SQLite file do not exclude each
// other.
//
// The lock is not reentrant. Callers (tree, web) also serialise a
// conversation's queries in memory, so in practice the lock is contended
// only between replicas.
func (s *Store) Lock(ctx context.Context, userID, convID string) (unlock func(), err error) {
	if err := s.check(userID, convID); err != nil {
		return nil, err
	}
	key := conversationRef{userID, convID}
	// In process first: of this Store's callers, only one at a time asks
	// the database for a conversation's lease.
	if err := s.locks.lock(ctx, key); err != nil {
		return nil, err
	}
	if s.dialect != dialectPostgres {
		return sync.OnceFunc(func() { s.locks.unlock(key) }), nil
	}
	l := lease{user: userID, conv: convID, owner: newLeaseOwner()}
	if err := s.takeLease(ctx, l); err != nil {
		s.locks.unlock(key)
		if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ErrUnavailable) {
			return nil, ctxErr
		}
		return nil, err
	}
	return sync.OnceFunc(func() {
		s.releaseLease(l)
		s.locks.unlock(key)
	}), nil
}

// keyedMutex is a set of mutexes, one per conversation, that honour a ctx
// while waiting. Entries exist only while held or waited for. The zero
// value is ready for use.
//
// It is keyed by the ids themselves, which clients choose, not by a hash
// of them: two conversations whose ids collide (by hash, or by how they
// are joined) would share a mutex, so that one user could hold up
// another's queries, and a caller holding one conversation's lock that
// took the other's would wait for itself forever.
type keyedMutex struct {
	// mu guards held.
	mu   sync.Mutex
	held map[conversationRef]*keyLock
}

// keyLock is one key's mutex: a token in sem means held. refs counts the
// holder and the waiters, so the entry is dropped when nobody needs it.
type keyLock struct {
	sem  chan struct{}
	refs int
}

func (m *keyedMutex) lock(ctx context.Context, key conversationRef) error {
	m.mu.Lock()
	if m.held == nil {
		m.held = make(map[conversationRef]*keyLock)
	}
	l := m.held[key]
	if l == nil {
		l = &keyLock{sem: make(chan struct{}, 1)}
		m.held[key] = l
	}
	l.refs++
	m.mu.Unlock()

	select {
	case l.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		m.release(key, l)
		return ctx.Err()
	}
}

func (m *keyedMutex) unlock(key conversationRef) {
	m.mu.Lock()
	l := m.held[key]
	m.mu.Unlock()
	<-l.sem
	m.release(key, l)
}

// release drops one reference to l and forgets it when it was the last.
func (m *keyedMutex) release(key conversationRef, l *keyLock) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l.refs--
	if l.refs == 0 {
		delete(m.held, key)
	}
}
