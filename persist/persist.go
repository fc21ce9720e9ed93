package persist

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/elysia-go/elysia/store"
	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
)

// Store keeps conversations and users in a [store.Store]. It holds no state
// of its own and is safe for concurrent use; it does not own the store.Store
// and never closes it.
type Store struct {
	s *store.Store
}

var (
	_ tree.Store          = (*Store)(nil)
	_ tree.StoreLister    = (*Store)(nil)
	_ tree.StoreDeleter   = (*Store)(nil)
	_ tree.UserStore      = (*Store)(nil)
	_ tree.StoreAppender  = (*Store)(nil)
	_ tree.StoreVersioner = (*Store)(nil)
	_ tree.Locker         = (*Store)(nil)
)

// New returns a Store over s. It panics if s is nil, a programming error.
func New(s *store.Store) *Store {
	if s == nil {
		panic("persist.New: nil store")
	}
	return &Store{s: s}
}

// notFound turns the store's ErrNotFound into an error that also matches
// tree.ErrNotFound, and its ErrUnavailable into one that also matches
// tree.ErrStoreUnavailable, keeping its message.
func notFound(err error) error {
	if errors.Is(err, store.ErrNotFound) && !errors.Is(err, tree.ErrNotFound) {
		return &matches{err, tree.ErrNotFound}
	}
	if errors.Is(err, store.ErrUnavailable) && !errors.Is(err, tree.ErrStoreUnavailable) {
		return &matches{err, tree.ErrStoreUnavailable}
	}
	return err
}

// matches is a store error that matches a tree sentinel too.
type matches struct{ err, sentinel error }

func (e *matches) Error() string   { return e.err.Error() }
func (e *matches) Unwrap() []error { return []error{e.err, e.sentinel} }

// Lock takes a conversation's lock across replicas ([store.Store.Lock]),
// for [tree.Locker], its errors matching tree's sentinels.
func (p *Store) Lock(ctx context.Context, userID, convID string) (unlock func(), err error) {
	unlock, err = p.s.Lock(ctx, userID, convID)
	return unlock, notFound(err)
}

// Load returns the saved state of a conversation; ok is false when none is
// saved. The history and environment are its turns' in order, each turn's
// results whole or, once a later query trimmed them, as their digests.
func (p *Store) Load(ctx context.Context, userID, convID string) (_ tree.ConversationState, _ bool, err error) {
	defer func() { err = notFound(err) }()
	c, err := p.s.GetConversation(ctx, userID, convID)
	if errors.Is(err, store.ErrNotFound) {
		return tree.ConversationState{}, false, nil
	}
	if err != nil {
		return tree.ConversationState{}, false, err
	}
	st := tree.ConversationState{
		UserID:         c.UserID,
		ConversationID: c.ID,
		Title:          c.Title,
		InitMode:       tree.InitMode(c.InitMode),
		UpdatedAt:      c.UpdatedAt,
		Version:        c.Version,
		History:        []tree.Message{},
		Environment:    map[string]map[string][]tools.EnvEntry{},
	}
	if err := unmarshalIf(c.TreeOps, &st.Ops); err != nil {
		return st, false, fmt.Errorf("conversation %s/%s: tree ops: %w", userID, convID, err)
	}
	turns, err := p.s.Turns(ctx, userID, convID)
	if errors.Is(err, store.ErrNotFound) {
		return tree.ConversationState{}, false, nil // deleted in between
	}
	if err != nil {
		return st, false, err
	}
	for _, t := range turns {
		if err := p.loadTurn(ctx, &st, t); err != nil {
			return st, false, fmt.Errorf("conversation %s/%s: turn %d: %w", userID, convID, t.Seq, err)
		}
	}
	return st, true, nil
}

// loadTurn appends turn t to st. A turn moved from the first schema, whose
// results have no digests, gets them, so that the next query can trim it.
func (p *Store) loadTurn(ctx context.Context, st *tree.ConversationState, t store.Turn) error {
	var msgs []tree.Message
	if err := json.Unmarshal(t.Messages, &msgs); err != nil {
		return fmt.Errorf("messages: %w", err)
	}
	st.History = append(st.History, msgs...)
	raw := t.Results
	if raw == nil {
		raw = t.Digests
	}
	var results map[string]map[string][]tools.EnvEntry
	if err := unmarshalIf(raw, &results); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	for tool, byName := range results {
		if st.Environment[tool] == nil {
			st.Environment[tool] = map[string][]tools.EnvEntry{}
		}
		for name, list := range byName {
			st.Environment[tool][name] = append(st.Environment[tool][name], list...)
		}
	}
	if t.Results != nil && t.Digests == nil && len(results) > 0 {
		_, digests, err := encodeResults(results)
		if err != nil {
			return err
		}
		if err := p.s.SetDigests(ctx, st.UserID, st.ConversationID, t.Seq, digests); err != nil {
			return err
		}
	}
	return nil
}

func unmarshalIf(b json.RawMessage, v any) error {
	if len(b) == 0 {
		return nil
	}
	return json.Unmarshal(b, v)
}

// Save replaces a conversation's saved state with st, in one turn, and,
// when events is not nil, appends one query's events to its event log, in
// one transaction. Either creates the user when needed. The Manager saves
// with [Store.Append]; Save is for a state made whole elsewhere (a copy,
// an import).
func (p *Store) Save(ctx context.Context, st tree.ConversationState, events []tools.Envelope) (err error) {
	defer func() { err = notFound(err) }()
	c, err := conversationRow(st.UserID, st.ConversationID, st.Title, st.InitMode, st.Ops)
	if err != nil {
		return err
	}
	turn, err := newTurn("", st.History, st.Environment)
	if err != nil {
		return err
	}
	evs, queryID, err := encodeEvents(events)
	if err != nil {
		return err
	}
	return p.s.ReplaceConversation(ctx, c, turn, queryID, evs)
}

// Append saves what changed in a conversation since its last save, and
// appends a query's events: a tree change (no messages, results or events)
// updates the conversation's row; a query's appends one turn with its
// messages and results, whole and as digests, and its events, large
// results with a digest too, so that the store trims what the next query
// makes old.
//
// A query's save is keyed by its change's SaveKey: appending a save that
// is saved already writes nothing and returns the conversation's version,
// so a save that failed may be retried, with the same change and events,
// whether or not its commit went through.
func (p *Store) Append(ctx context.Context, ch tree.ConversationChange, events []tools.Envelope) (_ int64, err error) {
	defer func() { err = notFound(err) }()
	c, err := conversationRow(ch.UserID, ch.ConversationID, ch.Title, ch.InitMode, ch.Ops)
	if err != nil {
		return 0, err
	}
	if len(ch.Messages) == 0 && len(ch.Results) == 0 && events == nil {
		if err := p.s.SaveConversation(ctx, c); err != nil {
			return 0, err
		}
		return c.Version, nil
	}
	evs, queryID, err := encodeEvents(events)
	if err != nil {
		return 0, err
	}
	var turn *store.Turn
	// A keyed save always has a turn, even without messages or results:
	// a save retried once it had committed then writes nothing again (see
	// store.Store.SaveQuery).
	if len(ch.Messages) > 0 || len(ch.Results) > 0 || ch.SaveKey != "" {
		if turn, err = newTurn(queryID, ch.Messages, ch.Results); err != nil {
			return 0, err
		}
		turn.Key = ch.SaveKey
	}
	if err := p.s.SaveQuery(ctx, c, turn, queryID, evs); err != nil {
		return 0, err
	}
	return c.Version, nil
}

// Version returns how many times a conversation was saved; ok is false
// when it is not saved.
func (p *Store) Version(ctx context.Context, userID, convID string) (_ int64, _ bool, err error) {
	defer func() { err = notFound(err) }()
	v, err := p.s.Version(ctx, userID, convID)
	if errors.Is(err, store.ErrNotFound) {
		return 0, false, nil
	}
	return v, err == nil, err
}

// conversationRow encodes a conversation's row.
func conversationRow(userID, convID, title string, mode tree.InitMode, ops []tree.Op) (*store.Conversation, error) {
	c := &store.Conversation{UserID: userID, ID: convID, Title: title, InitMode: string(mode)}
	var err error
	if c.TreeOps, err = json.Marshal(nonNil(ops)); err != nil {
		return nil, err
	}
	return c, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// List returns a user's saved conversations, most recently updated first.
func (p *Store) List(ctx context.Context, userID string) (_ []tree.ConversationInfo, err error) {
	defer func() { err = notFound(err) }()
	list, err := p.s.ListConversations(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := make([]tree.ConversationInfo, len(list))
	for i, c := range list {
		out[i] = tree.ConversationInfo{ConversationID: c.ID, Title: c.Title, UpdatedAt: c.UpdatedAt}
	}
	return out, nil
}

// Delete removes a conversation and its event log. A missing conversation
// is an error matching tree.ErrNotFound.
func (p *Store) Delete(ctx context.Context, userID, convID string) (err error) {
	defer func() { err = notFound(err) }()
	return notFound(p.s.DeleteConversation(ctx, userID, convID))
}

// Events returns a conversation's saved event log, oldest first, each
// envelope as it was sent. A conversation never saved has an empty log.
func (p *Store) Events(ctx context.Context, userID, convID string) (_ []json.RawMessage, err error) {
	defer func() { err = notFound(err) }()
	evs, err := p.s.Events(ctx, userID, convID)
	if errors.Is(err, store.ErrNotFound) {
		return []json.RawMessage{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, len(evs))
	for i, e := range evs {
		out[i] = e.Envelope
	}
	return out, nil
}

// EnsureUser creates the user when it does not exist and reports whether it
// did.
func (p *Store) EnsureUser(ctx context.Context, userID string) (existed bool, err error) {
	defer func() { err = notFound(err) }()
	return p.s.EnsureUser(ctx, userID)
}
