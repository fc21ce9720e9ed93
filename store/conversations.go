package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Conversation is a conversation's saved state. The JSON blobs belong to the
// tree and web layers; the store keeps them byte for byte, and nil (or empty)
// means absent.
type Conversation struct {
	// UserID and ID together are the key: two users may each have a
	// conversation with the same ID.
	UserID string
	ID     string
	// Title is the conversation's title, "" until one is set.
	Title string
	// InitMode is the tree's initialisation mode ("one_branch", ...).
	InitMode string
	// TreeOps are the tools and branches added or removed through the API.
	TreeOps json.RawMessage
	// History is the conversation history.
	History json.RawMessage
	// Environment holds the results gathered so far.
	Environment json.RawMessage
	// CreatedAt and UpdatedAt are in UTC with microsecond precision. The
	// save methods set both: CreatedAt to the stored creation time (the
	// given one, or now, when the conversation is created) and UpdatedAt to
	// now, whatever they held.
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ConversationSummary is a line of [Store.ListConversations].
type ConversationSummary struct {
	ID        string
	Title     string
	UpdatedAt time.Time
}

// Event is one saved event of a conversation's event log.
type Event struct {
	// Seq orders the events of a conversation: it increases with every event
	// saved, but is not dense (numbers are shared by all conversations).
	Seq int64
	// QueryID is the query that produced the event.
	QueryID string
	// Envelope is the event as it was sent on the wire.
	Envelope json.RawMessage
}

// The columns each save method owns when the conversation already exists:
// the tree API and queries write different parts of a conversation, so that
// a stale copy in one cannot undo the other's last save. On insert every
// column is written.
const (
	upsertConversation = `INSERT INTO conversations
		(user_id, id, title, init_mode, tree_ops, history, environment, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (user_id, id) DO UPDATE SET `
	saveConversationSet = `init_mode = excluded.init_mode,
		tree_ops = excluded.tree_ops, updated_at = excluded.updated_at RETURNING created_at`
	saveQuerySet = `title = excluded.title, history = excluded.history,
		environment = excluded.environment, updated_at = excluded.updated_at RETURNING created_at`
)

// GetConversation returns the conversation convID of userID, or
// [ErrNotFound].
func (s *Store) GetConversation(ctx context.Context, userID, convID string) (*Conversation, error) {
	if err := s.check(userID, convID); err != nil {
		return nil, err
	}
	c := &Conversation{UserID: userID, ID: convID}
	var (
		treeOps, history, env sql.NullString
		created, updated      int64
	)
	err := s.db.QueryRowContext(ctx, s.q(`SELECT title, init_mode, tree_ops, history, environment, created_at, updated_at
		FROM conversations WHERE user_id = ? AND id = ?`), userID, convID).
		Scan(&c.Title, &c.InitMode, &treeOps, &history, &env, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("conversation %q of user %q: %w", convID, userID, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get conversation %q of user %q: %w", convID, userID, err)
	}
	c.TreeOps, c.History, c.Environment = rawJSON(treeOps), rawJSON(history), rawJSON(env)
	c.CreatedAt, c.UpdatedAt = fromMicros(created), fromMicros(updated)
	return c, nil
}

// ListConversations returns userID's conversations, most recently updated
// first (ties by id). It returns an empty, non-nil slice when there are none.
func (s *Store) ListConversations(ctx context.Context, userID string) ([]ConversationSummary, error) {
	if err := s.check(userID); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT id, title, updated_at FROM conversations
		WHERE user_id = ? ORDER BY updated_at DESC, id`), userID)
	if err != nil {
		return nil, fmt.Errorf("list conversations of user %q: %w", userID, err)
	}
	defer func() { _ = rows.Close() }() // read-only; rows.Err is checked below
	list := []ConversationSummary{}
	for rows.Next() {
		var (
			cs      ConversationSummary
			updated int64
		)
		if err := rows.Scan(&cs.ID, &cs.Title, &updated); err != nil {
			return nil, fmt.Errorf("list conversations of user %q: %w", userID, err)
		}
		cs.UpdatedAt = fromMicros(updated)
		list = append(list, cs)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list conversations of user %q: %w", userID, err)
	}
	return list, nil
}

// SaveConversation creates the conversation c (and its user) or, when it
// exists, updates the parts the tree API changes: InitMode, TreeOps and
// UpdatedAt. Title, History and Environment are written only when the
// conversation is created; queries update them with [Store.SaveQuery]. (A
// replica holding an older copy of the conversation must not blank the
// title a query set elsewhere.)
func (s *Store) SaveConversation(ctx context.Context, c *Conversation) error {
	return s.save(ctx, c, saveConversationSet, "", nil)
}

// SaveQuery saves what one query did, in one transaction: it creates the
// conversation c (and its user) or updates its Title, History, Environment
// and UpdatedAt, and appends envelopes, in order, to the conversation's event
// log under queryID. Either all of it is saved or none of it is. Each
// envelope must be a JSON value.
//
// Concurrent SaveQuery calls on one conversation are safe but their events
// may interleave; callers serialise a conversation's queries with
// [Store.Lock].
func (s *Store) SaveQuery(ctx context.Context, c *Conversation, queryID string, envelopes []json.RawMessage) error {
	for i, e := range envelopes {
		if len(e) == 0 || !json.Valid(e) {
			return fmt.Errorf("save query %q: event %d is not valid JSON", queryID, i)
		}
	}
	return s.save(ctx, c, saveQuerySet, queryID, envelopes)
}

// save upserts c with the given SET clause and appends envelopes, in one
// transaction.
func (s *Store) save(ctx context.Context, c *Conversation, set, queryID string, envelopes []json.RawMessage) (err error) {
	if c == nil {
		return errors.New("save conversation: nil conversation")
	}
	if err := s.check(c.UserID, c.ID); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("save conversation %q of user %q: %w", c.ID, c.UserID, err)
		}
	}()
	for _, f := range []struct {
		name string
		b    json.RawMessage
	}{{"tree ops", c.TreeOps}, {"history", c.History}, {"environment", c.Environment}} {
		if err := validJSON(f.name, f.b); err != nil {
			return err
		}
	}
	t := s.now()
	created := c.CreatedAt
	if created.IsZero() {
		created = t
	}

	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // sql.ErrTxDone after Commit
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO users (id, created_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`),
		c.UserID, t.UnixMicro()); err != nil {
		return err
	}
	var stored int64
	if err := tx.QueryRowContext(ctx, s.q(upsertConversation+set),
		c.UserID, c.ID, c.Title, c.InitMode, nullJSON(c.TreeOps), nullJSON(c.History), nullJSON(c.Environment),
		created.UnixMicro(), t.UnixMicro()).Scan(&stored); err != nil {
		return err
	}
	if len(envelopes) > 0 {
		stmt, err := tx.PrepareContext(ctx, s.q(`INSERT INTO events (user_id, conversation_id, query_id, envelope) VALUES (?, ?, ?, ?)`))
		if err != nil {
			return err
		}
		defer func() { _ = stmt.Close() }() // the transaction's end frees it anyway
		for i, e := range envelopes {
			if s.beforeEvent != nil {
				if err := s.beforeEvent(i); err != nil {
					return err
				}
			}
			if _, err := stmt.ExecContext(ctx, c.UserID, c.ID, queryID, string(e)); err != nil {
				return fmt.Errorf("event %d: %w", i, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	c.CreatedAt, c.UpdatedAt = fromMicros(stored), t
	return nil
}

// Events returns the event log of the conversation convID of userID, oldest
// first, or [ErrNotFound] when the conversation does not exist. A
// conversation without events has an empty, non-nil log.
func (s *Store) Events(ctx context.Context, userID, convID string) ([]Event, error) {
	if err := s.check(userID, convID); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT seq, query_id, envelope FROM events
		WHERE user_id = ? AND conversation_id = ? ORDER BY seq`), userID, convID)
	if err != nil {
		return nil, fmt.Errorf("events of conversation %q of user %q: %w", convID, userID, err)
	}
	defer func() { _ = rows.Close() }() // read-only; rows.Err is checked below
	events := []Event{}
	for rows.Next() {
		var (
			e   Event
			env string
		)
		if err := rows.Scan(&e.Seq, &e.QueryID, &env); err != nil {
			return nil, fmt.Errorf("events of conversation %q of user %q: %w", convID, userID, err)
		}
		e.Envelope = json.RawMessage(env)
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("events of conversation %q of user %q: %w", convID, userID, err)
	}
	if len(events) == 0 {
		var one int
		err := s.db.QueryRowContext(ctx, s.q(`SELECT 1 FROM conversations WHERE user_id = ? AND id = ?`), userID, convID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("conversation %q of user %q: %w", convID, userID, ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("events of conversation %q of user %q: %w", convID, userID, err)
		}
	}
	return events, nil
}

// DeleteConversation deletes the conversation convID of userID and its
// event log, or returns [ErrNotFound]. The user stays.
func (s *Store) DeleteConversation(ctx context.Context, userID, convID string) (err error) {
	if err := s.check(userID, convID); err != nil {
		return err
	}
	defer func() {
		if err != nil && !errors.Is(err, ErrNotFound) {
			err = fmt.Errorf("delete conversation %q of user %q: %w", convID, userID, err)
		}
	}()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // sql.ErrTxDone after Commit
	// The foreign key would cascade, but deleting the events explicitly
	// does not depend on SQLite's foreign_keys pragma.
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM events WHERE user_id = ? AND conversation_id = ?`), userID, convID); err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, s.q(`DELETE FROM conversations WHERE user_id = ? AND id = ?`), userID, convID)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("conversation %q of user %q: %w", convID, userID, ErrNotFound)
	}
	return tx.Commit()
}
