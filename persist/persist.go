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
	_ tree.Store        = (*Store)(nil)
	_ tree.StoreLister  = (*Store)(nil)
	_ tree.StoreDeleter = (*Store)(nil)
	_ tree.UserStore    = (*Store)(nil)
	// The replica lock is the store's own.
	_ tree.Locker = (*store.Store)(nil)
)

// New returns a Store over s. It panics if s is nil, a programming error.
func New(s *store.Store) *Store {
	if s == nil {
		panic("persist.New: nil store")
	}
	return &Store{s: s}
}

// notFound turns the store's ErrNotFound into an error that also matches
// tree.ErrNotFound, keeping its message.
func notFound(err error) error {
	if errors.Is(err, store.ErrNotFound) && !errors.Is(err, tree.ErrNotFound) {
		return &missing{err}
	}
	return err
}

// missing is a store error that matches tree.ErrNotFound too.
type missing struct{ err error }

func (e *missing) Error() string   { return e.err.Error() }
func (e *missing) Unwrap() []error { return []error{e.err, tree.ErrNotFound} }

// Load returns the saved state of a conversation; ok is false when none is
// saved.
func (p *Store) Load(ctx context.Context, userID, convID string) (tree.ConversationState, bool, error) {
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
	}
	if err := unmarshalIf(c.TreeOps, &st.Ops); err != nil {
		return st, false, fmt.Errorf("conversation %s/%s: tree ops: %w", userID, convID, err)
	}
	if err := unmarshalIf(c.History, &st.History); err != nil {
		return st, false, fmt.Errorf("conversation %s/%s: history: %w", userID, convID, err)
	}
	if err := unmarshalIf(c.Environment, &st.Environment); err != nil {
		return st, false, fmt.Errorf("conversation %s/%s: environment: %w", userID, convID, err)
	}
	return st, true, nil
}

func unmarshalIf(b json.RawMessage, v any) error {
	if len(b) == 0 {
		return nil
	}
	return json.Unmarshal(b, v)
}

// Save stores a conversation's state and, when events is not nil, appends
// one query's events to its event log, in one transaction. Either creates
// the user when needed.
func (p *Store) Save(ctx context.Context, st tree.ConversationState, events []tools.Envelope) error {
	c := &store.Conversation{UserID: st.UserID, ID: st.ConversationID, Title: st.Title, InitMode: string(st.InitMode)}
	var err error
	if c.TreeOps, err = json.Marshal(nonNil(st.Ops)); err != nil {
		return err
	}
	if c.History, err = json.Marshal(nonNil(st.History)); err != nil {
		return err
	}
	env := st.Environment
	if env == nil {
		env = map[string]map[string][]tools.EnvEntry{}
	}
	if c.Environment, err = json.Marshal(env); err != nil {
		return err
	}
	if events == nil {
		return p.s.SaveConversation(ctx, c)
	}
	raw := make([]json.RawMessage, len(events))
	queryID := ""
	for i, ev := range events {
		if raw[i], err = tools.Marshal(ev); err != nil {
			return err
		}
		queryID = ev.QueryID
	}
	return p.s.SaveQuery(ctx, c, queryID, raw)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// List returns a user's saved conversations, most recently updated first.
func (p *Store) List(ctx context.Context, userID string) ([]tree.ConversationInfo, error) {
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
func (p *Store) Delete(ctx context.Context, userID, convID string) error {
	return notFound(p.s.DeleteConversation(ctx, userID, convID))
}

// Events returns a conversation's saved event log, oldest first, each
// envelope as it was sent. A conversation never saved has an empty log.
func (p *Store) Events(ctx context.Context, userID, convID string) ([]json.RawMessage, error) {
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
	return p.s.EnsureUser(ctx, userID)
}
